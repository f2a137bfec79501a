#pragma once
// Runs side by side: one page that overlays the runs callbacks::Report wrote as JSON lines (the
// "run.jsonl" beside each "run.html"): loss against samples seen (or optimizer steps), validation
// loss and accuracy per epoch, the learning rate, and a table of each run's numbers. 64 x 1
// against 16 x 4, or per_window against per_micro_batch, on one chart:
//   accrue-report a.jsonl b.jsonl -o compare.html

#include <string>
#include <vector>

namespace accrue::callbacks {

/// The comparison page of the runs in `json_lines` (paths of Report's JSON lines files, at least
/// one), self-contained as Report's page is. Throws IoError for a file that cannot be read and
/// ValueError naming the file and line for one that is not a run's JSON lines.
std::string comparison_page(const std::vector<std::string>& json_lines);

}  // namespace accrue::callbacks
