// A libFuzzer custom mutator for the text inputs of both fuzz targets. Byte-level mutations
// rarely keep IR text parseable, so mostly a mutation here edits the text as tokens and
// lines: a number becomes one at a dtype or size edge (or a neighbour of itself), a word
// becomes another word of the input, a line is duplicated, deleted or moved. That keeps
// kernels parsing and verifying while their sizes, indices and addresses go to the edges,
// where the overflow bugs are. The rest of the time libFuzzer's own mutations run.
// Included by each target once; only with libFuzzer (TL_FUZZ_LIBFUZZER).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace tl_fuzz {

inline bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

/// [begin, end) of every maximal run of word characters.
inline std::vector<std::pair<size_t, size_t>> words(const std::string& s) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < s.size();) {
    if (!word_char(s[i])) {
      ++i;
      continue;
    }
    size_t b = i;
    while (i < s.size() && word_char(s[i])) ++i;
    out.emplace_back(b, i);
  }
  return out;
}

inline std::string edge_number(std::mt19937_64& rng, const std::string& old) {
  static const char* const kEdges[] = {"0",
                                       "1",
                                       "-1",
                                       "2",
                                       "3",
                                       "7",
                                       "8",
                                       "15",
                                       "16",
                                       "17",
                                       "31",
                                       "32",
                                       "33",
                                       "63",
                                       "64",
                                       "127",
                                       "128",
                                       "255",
                                       "256",
                                       "1000",
                                       "1024",
                                       "4096",
                                       "32767",
                                       "32768",
                                       "65535",
                                       "65536",
                                       "196608",
                                       "262144",
                                       "524288",
                                       "2147483647",
                                       "2147483648",
                                       "-2147483648",
                                       "4294967295",
                                       "4294967296",
                                       "9007199254740993",
                                       "4611686018427387904",
                                       "9223372036854775807",
                                       "-9223372036854775808",
                                       "9223372036854775806",
                                       "9223372036854775776",
                                       "2305843009213693953",
                                       "18446744073709551615",
                                       "1e308",
                                       "1e-45",
                                       "0.5",
                                       "-0.0",
                                       "nan",
                                       "inf",
                                       "65504",
                                       "3e9",
                                       "300",
                                       "-129"};
  if (rng() % 3 == 0) {
    // A neighbour of the old value: off by one, doubled, negated.
    // In __int128, so the neighbours of INT64_MAX and INT64_MIN are written out too (the
    // parser must reject them).
    __int128 v = std::strtoll(old.c_str(), nullptr, 10);
    switch (rng() % 4) {
      case 0:
        v += 1;
        break;
      case 1:
        v -= 1;
        break;
      case 2:
        v *= 2;
        break;
      default:
        v = -v;
    }
    bool neg = v < 0;
    unsigned __int128 m =
        neg ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
    std::string digits;
    do {
      digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
      m /= 10;
    } while (m != 0);
    return neg ? "-" + digits : digits;
  }
  return kEdges[rng() % std::size(kEdges)];
}

inline size_t mutate_text(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::mt19937_64 rng(seed);
  if (rng() % 4 == 0 || size == 0) return LLVMFuzzerMutate(data, size, max_size);
  std::string s(reinterpret_cast<const char*>(data), size);
  auto ws = words(s);
  switch (rng() % 6) {
    case 0:
    case 1:
    case 2: {  // a number to an edge value
      std::vector<std::pair<size_t, size_t>> nums;
      for (auto w : ws)
        if (std::isdigit(static_cast<unsigned char>(s[w.first]))) nums.push_back(w);
      if (nums.empty()) return LLVMFuzzerMutate(data, size, max_size);
      auto [b, e] = nums[rng() % nums.size()];
      if (b > 0 && s[b - 1] == '-') --b;
      s.replace(b, e - b, edge_number(rng, s.substr(b, e - b)));
      break;
    }
    case 3: {  // a word to another word of the input
      if (ws.size() < 2) return LLVMFuzzerMutate(data, size, max_size);
      auto [b, e] = ws[rng() % ws.size()];
      auto [ob, oe] = ws[rng() % ws.size()];
      s.replace(b, e - b, s.substr(ob, oe - ob));
      break;
    }
    default: {  // a line duplicated, deleted or moved
      std::vector<size_t> starts{0};
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i] == '\n' && i + 1 < s.size()) starts.push_back(i + 1);
      size_t k = rng() % starts.size();
      size_t b = starts[k], e = s.find('\n', b);
      e = e == std::string::npos ? s.size() : e + 1;
      std::string line = s.substr(b, e - b);
      if (line.empty() || line.back() != '\n') line += '\n';
      size_t to = starts[rng() % starts.size()];
      switch (rng() % 3) {
        case 0:
          s.insert(to, line);
          break;
        case 1:
          s.erase(b, e - b);
          break;
        default:
          s.erase(b, e - b);
          s.insert(std::min(to, s.size()), line);
      }
    }
  }
  if (s.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, s.data(), s.size());
  return s.size();
}

}  // namespace tl_fuzz

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  return tl_fuzz::mutate_text(data, size, max_size, seed);
}
