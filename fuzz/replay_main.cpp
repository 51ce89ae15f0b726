// A stand-in for libFuzzer's main in builds without it (TL_FUZZ=OFF: the default gcc build and
// CI): runs a fuzz target's LLVMFuzzerTestOneInput once on every file named on the command
// line or found under a named directory, in sorted order, so the committed seed corpus and
// every past crash stay regression tests (registered with ctest, docs/fuzzing.md). A target
// reports a failure by aborting, which fails the test; the file being run is printed first.
// Files ending in .md (notes next to the inputs) are skipped.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    fs::path p = argv[i];
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(p, ec))
        if (e.is_regular_file() && e.path().extension() != ".md") files.push_back(e.path());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "%s: no such file or directory: %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "cannot read %s\n", f.c_str());
      return 2;
    }
    std::fprintf(stderr, "running %s (%zu bytes)\n", f.c_str(), data.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("replayed %zu inputs in %.2f s\n", files.size(), secs);
  return files.empty() ? 2 : 0;
}
