// CSV tables: quoting, line ends, field counts, numbers, categories and targets. The first byte
// chooses the options (header, delimiter, categorical first column, regression, a fill).
#include <accrue/accrue.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t choice = data[0];
  const std::string& path = accrue::fuzz::write_input("csv", data + 1, size - 1);
  accrue::datasets::CsvOptions options{.header = (choice & 1) != 0,
                                       .delimiter = (choice & 2) != 0 ? ';' : ',',
                                       .skip_rows = (choice >> 6) & 1,
                                       .classes = (choice & 8) == 0};
  if (choice & 4) options.categorical = {0};
  if (choice & 16) options.missing = 0.0f;
  if (choice & 32) options.target = std::nullopt;
  try {
    const accrue::Dataset d = accrue::datasets::csv(path, options);
    (void)d.inputs().to_vector<float>();
  } catch (const accrue::Error&) {
  }
  return 0;
}
