#include "image_folder.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include <sys/stat.h>

#include "../framework/core/files.hpp"
#include "../framework/core/log.hpp"
#include "../framework/core/memory.hpp"
#include "../framework/core/random.hpp"
#include "../framework/core/utf8.hpp"

namespace accrue::datasets {
namespace {

namespace fs = std::filesystem;

struct ImageFile {
  std::string path;  // relative to the folder
  std::int32_t label;
  std::uintmax_t bytes;
};

std::string lower_extension(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

// The names as a message shows them: cut and escaped (a folder's name may hold anything).
std::string shown(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + printable_name(n);
  return out;
}

std::vector<std::string> class_folders(const std::string& dir, const ImageFolderOptions& options) {
  if (!is_folder(dir, "image folder"))
    throw IoError(fmt::format("{}: not a folder (image_folder reads one sub-folder per class)", dir));
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec)) found.push_back(it->path().filename().string());  // a loop of links is no folder
  if (ec) throw IoError(fmt::format("{}: cannot be listed ({})", dir, ec.message()));
  std::sort(found.begin(), found.end());
  if (options.class_names.empty()) {
    if (found.empty()) throw IoError(fmt::format("{}: no sub-folders; image_folder reads one sub-folder per class", dir));
    return found;
  }
  for (const std::string& name : options.class_names)
    if (!std::binary_search(found.begin(), found.end(), name))
      throw IoError(fmt::format("{}: class_names names {}, which is not a sub-folder (there are: {})", dir,
                                printable_excerpt(name), shown(found)));
  return options.class_names;
}

// What a walk of the class folders met besides images.
struct Skipped {
  std::int64_t undecodable = 0;  // .bmp and .gif
  std::int64_t unreadable = 0;   // entries whose kind cannot be found (a loop of links, no permission)
  std::int64_t revisited = 0;    // folders reached a second time through links
};

// The image files under `folder`, relative to `dir`. Links to folders are followed with
// follow_links, each folder once (by its device and inode), so a link to a folder above it ends
// instead of recursing until the path is too long; an entry that cannot be looked at is counted
// and skipped rather than ending the whole walk.
std::vector<ImageFile> images_under(const std::string& dir, const fs::path& folder, std::int32_t label,
                                    const ImageFolderOptions& options, Skipped& skipped) {
  std::vector<ImageFile> mine;
  std::set<std::pair<dev_t, ino_t>> seen;
  const auto first_visit = [&](const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && seen.emplace(st.st_dev, st.st_ino).second;
  };
  first_visit(folder);
  const auto walk_options = options.follow_links ? fs::directory_options::follow_directory_symlink
                                                 : fs::directory_options::none;
  std::error_code ec;
  fs::recursive_directory_iterator it{folder, walk_options | fs::directory_options::skip_permission_denied, ec}, end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code kind;
    const fs::file_status status = it->status(kind);
    if (kind) {
      ++skipped.unreadable;
      continue;
    }
    if (fs::is_directory(status)) {
      if (!first_visit(it->path())) {
        ++skipped.revisited;
        it.disable_recursion_pending();
      }
      continue;
    }
    if (!fs::is_regular_file(status)) continue;
    const std::string ext = lower_extension(it->path());
    if (ext == ".bmp" || ext == ".gif") ++skipped.undecodable;
    if (ext != ".png" && ext != ".jpg" && ext != ".jpeg") continue;
    const std::uintmax_t bytes = it->file_size(kind);
    if (kind) {
      ++skipped.unreadable;
      continue;
    }
    mine.push_back({fs::relative(it->path(), dir).string(), label, bytes});
  }
  if (ec) throw IoError(fmt::format("{}: cannot be walked ({})", folder.string(), ec.message()));
  std::sort(mine.begin(), mine.end(), [](const ImageFile& a, const ImageFile& b) { return a.path < b.path; });
  return mine;
}

// Every image file of every class, sorted by class, then by path within it (Keras's order).
std::vector<ImageFile> index_files(const std::string& dir, const std::vector<std::string>& classes,
                                   const ImageFolderOptions& options) {
  std::vector<ImageFile> files;
  Skipped skipped;
  for (std::size_t label = 0; label < classes.size(); ++label) {
    const std::vector<ImageFile> mine =
        images_under(dir, fs::path(dir) / classes[label], static_cast<std::int32_t>(label), options, skipped);
    files.insert(files.end(), mine.begin(), mine.end());
  }
  if (skipped.undecodable > 0)
    log::warning("{}: {} .bmp or .gif files skipped (Accrue decodes PNG and JPEG)", dir, skipped.undecodable);
  if (skipped.unreadable > 0)
    log::warning("{}: {} entries skipped that cannot be looked at (a loop of symbolic links, a broken link, no permission)",
                 dir, skipped.unreadable);
  if (skipped.revisited > 0)
    log::warning("{}: {} folders reached again through symbolic links were read once", dir, skipped.revisited);
  if (files.empty())
    throw IoError(fmt::format("{}: no .png, .jpg or .jpeg files in its {} class folders", dir, classes.size()));
  return files;
}

// Keras's smart_resize: the largest centred window with the target's aspect ratio.
transforms::Image central_window(const transforms::Image& image, Size2 size) {
  const transforms::functional::Window w = transforms::functional::aspect_ratio_window(image.height, image.width, size);
  return transforms::functional::crop(image, w.top, w.left, w.height, w.width);
}

// Interleaved bytes to planes of floats, in [0, 1] as ToTensor divides them, or as they are.
transforms::Image planes_of(const DecodedImage& decoded, bool raw) {
  transforms::Image image(decoded.channels, decoded.height, decoded.width);
  const auto plane = static_cast<std::size_t>(decoded.width * decoded.height);
  const auto channels = static_cast<std::size_t>(decoded.channels);
  for (std::size_t c = 0; c < channels; ++c) {
    float* out = image.pixels.data() + c * plane;
    const std::uint8_t* in = decoded.pixels.data() + c;
    for (std::size_t p = 0; p < plane; ++p) out[p] = raw ? static_cast<float>(in[p * channels]) : static_cast<float>(in[p * channels]) / 255.0f;
  }
  return image;
}

transforms::Image image_as_read(const std::string& path, const ImageFolderOptions& options) {
  transforms::Image image = planes_of(read_image(path, options.channels, options.limits), options.raw_pixels);
  if (options.crop_to_aspect_ratio) image = central_window(image, options.image_size);
  // A resize as large as a model file's input shape may ask for (3 x 20000 x 20000 is 4.5 GiB).
  const auto resized_bytes = static_cast<std::size_t>(image.channels) * static_cast<std::size_t>(options.image_size.h) *
                             static_cast<std::size_t>(options.image_size.w) * sizeof(float);
  if (resized_bytes > (std::size_t{64} << 20))
    require_memory_for_file(2 * resized_bytes,
                            fmt::format("{} resized to {}x{}", path, options.image_size.h, options.image_size.w));
  if (image.height != options.image_size.h || image.width != options.image_size.w)
    image = transforms::functional::resize(image, options.image_size, options.interpolation, true);
  return image;
}

// Decoded on demand: reading sample i opens, decodes and resizes its file.
class ImageFolderSource final : public SampleSource {
 public:
  ImageFolderSource(std::string dir, std::vector<ImageFile> files, ImageFolderOptions options, std::string name)
      : dir_(std::move(dir)), files_(std::move(files)), options_(std::move(options)), name_(std::move(name)) {}

  std::string name() const override { return name_; }
  std::int64_t size() const override { return static_cast<std::int64_t>(files_.size()); }
  SampleLayout layout() const override {
    return {{{options_.channels, options_.image_size.h, options_.image_size.w}, DType::f32}, {Shape{}, DType::i32}};
  }
  void read(std::int64_t i, const ReadContext&, const SampleBuffers& out) const override {
    const ImageFile& f = files_[static_cast<std::size_t>(i)];
    const std::string path = (fs::path(dir_) / f.path).string();
    const transforms::Image image = image_as_read(path, options_);
    std::memcpy(out.inputs[0], image.pixels.data(), image.pixels.size() * sizeof(float));
    std::memcpy(out.targets[0], &f.label, sizeof f.label);
  }
  void read_targets(std::int64_t i, std::span<void* const> targets) const override {
    std::memcpy(targets[0], &files_[static_cast<std::size_t>(i)].label, sizeof(std::int32_t));
  }
  std::string fingerprint() const override {
    // The files' names, labels and sizes, and how they are read: not their bytes.
    uLong crc = crc32(0, nullptr, 0);
    const std::string how = fmt::format("{} {} {} {}{};", options_.image_size.str(), options_.channels,
                                        static_cast<int>(options_.interpolation), options_.crop_to_aspect_ratio,
                                        options_.raw_pixels ? " raw" : "");
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(how.data()), how.size());
    for (const ImageFile& f : files_) {
      const std::string line = fmt::format("{} {} {}\n", f.path, f.label, f.bytes);
      crc = crc32_z(crc, reinterpret_cast<const Bytef*>(line.data()), line.size());
    }
    return crc32_fingerprint(static_cast<std::uint32_t>(crc));
  }

 private:
  std::string dir_;
  std::vector<ImageFile> files_;
  ImageFolderOptions options_;
  std::string name_;
};

std::vector<ImageFile> side(std::vector<ImageFile> files, const ImageFolderOptions& options, Subset subset) {
  if (subset == Subset::all) return files;
  // Shuffled with the seed, then the last validation_split of them for validation, as Keras.
  Generator gen{options.seed};
  for (std::size_t i = files.size(); i > 1; --i) std::swap(files[i - 1], files[gen.below(i)]);
  const auto validation = static_cast<std::size_t>(options.validation_split * static_cast<double>(files.size()));
  const auto cut = static_cast<std::ptrdiff_t>(files.size() - validation);
  if (subset == Subset::training) return {files.begin(), files.begin() + cut};
  return {files.begin() + cut, files.end()};
}

void check_options(const ImageFolderOptions& o) {
  ACCRUE_CHECK(o.image_size.h >= 1 && o.image_size.w >= 1, "image_folder: image_size {} must be at least 1x1",
               o.image_size.str());
  ACCRUE_CHECK(o.channels == 1 || o.channels == 3 || o.channels == 4, "image_folder: channels must be 1, 3 or 4, got {}",
               o.channels);
  ACCRUE_CHECK(o.validation_split >= 0.0 && o.validation_split < 1.0,
               "image_folder: validation_split {} is not in [0, 1)", o.validation_split);
  ACCRUE_CHECK(o.subset == Subset::all || o.validation_split > 0.0,
               "image_folder: a training or validation subset needs a validation_split");
  ACCRUE_CHECK(o.subset != Subset::all || o.validation_split == 0.0,
               "image_folder: a validation_split needs .subset (training or validation), or image_folder_split for both");
}

Dataset make(const std::string& dir, const ImageFolderOptions& options, Subset subset) {
  const std::vector<std::string> classes = class_folders(dir, options);
  std::vector<ImageFile> all = index_files(dir, classes, options);
  const std::size_t total = all.size();
  std::vector<ImageFile> files = side(std::move(all), options, subset);
  if (files.empty())
    throw IoError(fmt::format("{}: validation_split {} of its {} images leaves the {} subset empty", dir,
                              options.validation_split, total, subset == Subset::training ? "training" : "validation"));
  const std::string name = fmt::format("{}{}", fs::path(dir).filename().string(),
                                       subset == Subset::training ? " (training)" : subset == Subset::validation ? " (validation)" : "");
  return Dataset{std::make_shared<const ImageFolderSource>(dir, std::move(files), options, name)}.with_class_names(classes);
}

}  // namespace

Tensor read_image_sample(const std::string& path, const ImageFolderOptions& options) {
  const transforms::Image image = image_as_read(path, options);
  return Tensor::from(std::vector<float>(image.pixels.begin(), image.pixels.end()), image.shape());
}

Tensor read_image_pixels(const std::string& path, int channels, const ImageLimits& limits) {
  ACCRUE_CHECK(channels == 1 || channels == 3 || channels == 4, "read_image_pixels: channels must be 1, 3 or 4, got {}", channels);
  const transforms::Image image = planes_of(read_image(path, channels, limits), true);
  return Tensor::from(std::vector<float>(image.pixels.begin(), image.pixels.end()), image.shape());
}

Dataset image_folder(const std::string& dir, const ImageFolderOptions& options) {
  check_options(options);
  return make(dir, options, options.subset);
}

std::pair<Dataset, Dataset> image_folder_split(const std::string& dir, ImageFolderOptions options) {
  ACCRUE_CHECK(options.validation_split > 0.0, "image_folder_split: needs a validation_split above 0");
  options.subset = Subset::training;
  check_options(options);
  return {make(dir, options, Subset::training), make(dir, options, Subset::validation)};
}

std::vector<std::string> image_folder_classes(const std::string& dir, const ImageFolderOptions& options) {
  return class_folders(dir, options);
}

}  // namespace accrue::datasets
