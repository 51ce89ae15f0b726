// Fuzz target: the Tensor and Device API, driven by a small line-based script so that inputs
// (and every crash reproducer) are readable text. Each line is one call on numbered slots
// (devices d0..d1, tensors t0..t7):
//
//   device D [TARGET]          a new Device in slot D (the old one, if any, is destroyed:
//                              tensors made on it outlive it)
//   drop D                     destroys device D
//   empty T D DTYPE DIMS...    Tensor::empty        full T D DTYPE VALUE DIMS...
//   arange T D DTYPE START STEP DIMS...              randn T D DTYPE SEED DIMS...
//   uniform T D DTYPE SEED LO HI DIMS...             from_vector T D DTYPE NDIM DIMS... VALUES...
//   slice T S DIM START LEN    T = S.slice(...)      reshape T S DIMS...
//   get T FLAT                 set T FLAT VALUE      tovec T      info T
//   copy T S                   undef T               launch D K ARGS... (tN or a number each)
//
// Integers take C syntax (0x...), `B^E` powers and a trailing `+N`/`-N` ("2^61+1"); values
// are strtod's (nan, inf). Unknown lines are skipped. The harness only refuses calls that
// would really allocate or touch more than a few MB; calls whose sizes overflow or are
// negative are made, since rejecting them is the library's job. Every call must return or
// throw tl::Error; after a successful call the harness checks what it can without trusting
// the library: set-then-get round trips, views read the elements of their source, and the
// DLPack view matches. Built as a libFuzzer target with TL_FUZZ=ON, else with
// replay_main.cpp (docs/fuzzing.md).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tl/error.h"
#include "tl/npu/npu.h"
#include "tl/npu/numerics.h"
#include "tl/parser.h"
#include "tl/runtime.h"

#ifdef TL_FUZZ_LIBFUZZER
#include "text_mutator.h"
#endif

namespace {

using namespace tl;

constexpr int kDevices = 2, kTensors = 8, kMaxLines = 256, kMaxDims = 8;
constexpr int64_t kMaxBytes = int64_t{16} << 20;  // what one call may really allocate
constexpr int64_t kMaxElements = 1 << 20;         // what one call may really loop over

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "\n==== fuzz_tensor_api: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

/// TL_FUZZ_VERBOSE=1: print each line and what became of it (to check what seeds reach).
bool verbose() {
  static const bool v = [] {
    const char* e = std::getenv("TL_FUZZ_VERBOSE");
    return e && *e && *e != '0';
  }();
  return v;
}

int64_t saturate(__int128 v) {
  if (v > INT64_MAX) return INT64_MAX;
  if (v < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(v);
}

/// "123", "-0x10", "2^61", "2^63-1", "-2^61+5"; garbage reads as 0.
int64_t parse_int(const std::string& tok) {
  const char* s = tok.c_str();
  char* end;
  __int128 v = std::strtoll(s, &end, 0);
  if (*end == '^') {
    long e = std::strtol(end + 1, &end, 10);
    __int128 base = v;
    v = 1;
    // Both factors within int64: the product fits __int128; saturate() clamps the result
    // (and 64 steps are enough for any base but 0 and +-1).
    for (long i = 0; i < std::min(e, 64L) && v <= INT64_MAX && v >= INT64_MIN; ++i) v *= base;
  }
  if (*end == '+' || *end == '-')
    v = saturate(v) + static_cast<__int128>(std::strtoll(end, &end, 0));
  return saturate(v);
}

/// A script line, as tokens.
class Line {
 public:
  explicit Line(const std::string& text) {
    std::istringstream in(text);
    std::string t;
    while (in >> t) toks_.push_back(t);
  }
  bool empty() const { return toks_.empty(); }
  size_t size() const { return toks_.size(); }
  const std::string& op() const { return toks_[0]; }
  const std::string& tok(size_t i) const {
    static const std::string none;
    return i < toks_.size() ? toks_[i] : none;
  }
  int64_t i(size_t k) const { return parse_int(tok(k)); }
  double f(size_t k) const { return std::strtod(tok(k).c_str(), nullptr); }
  /// A slot number in [0, n) (any integer, wrapped).
  int slot(size_t k, int n) const { return static_cast<int>(((i(k) % n) + n) % n); }
  DType dtype(size_t k) const {
    if (auto t = parse_dtype(tok(k))) return *t;
    return static_cast<DType>(slot(k, kNumDTypes));
  }
  /// Integers from token `k` on (at most kMaxDims, or `n`).
  std::vector<int64_t> ints(size_t k, size_t n = kMaxDims) const {
    std::vector<int64_t> v;
    for (; k < toks_.size() && v.size() < n; ++k) v.push_back(i(k));
    return v;
  }

 private:
  std::vector<std::string> toks_;
};

/// The exact element count of `shape`, or -1 if a dimension is negative or it exceeds int64.
__int128 exact_numel(const std::vector<int64_t>& shape) {
  // A zero dimension makes any shape empty, wherever it stands: (2^63 - 1, 2^62, 0) has no
  // elements and no overflowing stride, as in torch.
  for (int64_t d : shape)
    if (d < 0) return -1;
  for (int64_t d : shape)
    if (d == 0) return 0;
  __int128 n = 1;
  for (int64_t d : shape) {
    n *= d;
    if (n > INT64_MAX) return -1;
  }
  return n;
}

/// Whether the harness makes a creation call with this shape: yes if it fits the harness's
/// limits, and yes if it is invalid (negative, overflowing, beyond the device's GM), which the
/// library must reject; no if it is valid but would really allocate or fill too much.
bool may_create(const std::vector<int64_t>& shape, DType t, const Device& dev, bool fills) {
  __int128 n = exact_numel(shape);
  if (n < 0) return true;
  __int128 bytes = n * dtype_bytes(t);
  if (bytes > dev.target().gm_bytes) return true;
  return bytes <= kMaxBytes && (!fills || n <= kMaxElements);
}

bool same_value(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

/// The element `flat` of `dtype` after a set(flat, v): v rounded as the tensor stores it.
double stored(DType t, double v) {
  alignas(8) uint8_t buf[8] = {};
  npu::from_double(t, v, buf);
  return npu::to_double(t, buf);
}

/// Flat index of row-major `idx` in `shape`.
int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}
std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

/// Kernels `launch` runs: their argument checks meet the tensors the script made.
const std::vector<CompiledKernel>& kernels() {
  static const std::vector<CompiledKernel> ks = [] {
    const char* const kText[] = {
        R"(M = T.dynamic("M")

@T.prim_func
def scale_rows(X: T.Tensor((M, 8), "float32"), Y: T.Tensor((M, 8), "float32"), alpha: T.float32, k: T.int8):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            ub = T.alloc_ub((1, 8), "float32")
            for r in T.serial(M):
                if vid == 0:
                    T.copy(X[r:r + 1, 0:8], ub)
                    T.set_flag("MTE2", "V", 0)
                    T.wait_flag("MTE2", "V", 0)
                    T.tile.mul(ub, ub, alpha)
                    T.tile.add(ub, ub, T.cast(k, "float32"))
                    T.set_flag("V", "MTE3", 0)
                    T.wait_flag("V", "MTE3", 0)
                    T.copy(ub, Y[r:r + 1, 0:8])
                    T.barrier_all()
)",
        R"(@T.prim_func
def copy_strided(X: T.Tensor((4, 16), "int32", strides=(32, 1)), Y: T.Tensor((4, 16), "int32"), n: T.int32):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            ub = T.alloc_ub((1, 16), "int32")
            r = cid * 2 + vid
            T.copy(X[r:r + 1, 0:16], ub)
            T.set_flag("MTE2", "V", 0)
            T.wait_flag("MTE2", "V", 0)
            T.tile.add(ub, ub, n)
            T.set_flag("V", "MTE3", 0)
            T.wait_flag("V", "MTE3", 0)
            T.copy(ub, Y[r:r + 1, 0:16])
)",
    };
    std::vector<CompiledKernel> out;
    for (const char* text : kText) {
      try {
        out.push_back(
            compile(parse(text, "tensor_api_fuzzer"), default_target(), {.cache = false}));
      } catch (const std::exception& e) {
        fail(std::string("a built-in kernel does not compile: ") + e.what());
      }
    }
    return out;
  }();
  return ks;
}

class Script {
 public:
  void run(std::string_view text) {
    int lines = 0;
    size_t p = 0;
    while (p < text.size() && lines < kMaxLines) {
      size_t end = text.find_first_of("\n;", p);
      if (end == std::string_view::npos) end = text.size();
      std::string line(text.substr(p, end - p));
      Line l{line};
      p = end + 1;
      if (l.empty()) continue;
      ++lines;
      try {
        step(l);
        if (verbose()) std::fprintf(stderr, "  %s\n", line.c_str());
      } catch (const Error& e) {
        // The library rejected the call: fine, whatever it was.
        if (verbose()) std::fprintf(stderr, "  %s -> %s\n", line.c_str(), e.what());
      }
    }
  }

 private:
  std::unique_ptr<Device> dev_[kDevices];
  Tensor t_[kTensors];

  Device* device(const Line& l, size_t k) { return dev_[l.slot(k, kDevices)].get(); }
  Tensor& tensor(const Line& l, size_t k) { return t_[l.slot(k, kTensors)]; }

  void step(const Line& l) {
    const std::string& op = l.op();
    if (op == "device") {
      const Target* target = &default_target();
      if (!l.tok(2).empty()) {
        try {
          target = &get_target(l.tok(2));
        } catch (const Error&) {
        }
      }
      dev_[l.slot(1, kDevices)] = std::make_unique<Device>(*target);
    } else if (op == "drop") {
      dev_[l.slot(1, kDevices)].reset();
    } else if (op == "empty" || op == "full" || op == "arange" || op == "randn" ||
               op == "uniform") {
      create(l);
    } else if (op == "from_vector") {
      Device* d = device(l, 2);
      if (!d) return;
      DType t = l.dtype(3);
      size_t ndim = static_cast<size_t>(l.slot(4, kMaxDims + 1));
      std::vector<int64_t> shape = l.ints(5, ndim);
      std::vector<double> values;
      for (size_t k = 5 + shape.size(); k < l.size() && values.size() < 4096; ++k)
        values.push_back(l.f(k));
      if (!may_create(shape, t, *d, true)) return;
      tensor(l, 1) = from_vector(*d, shape, t, values);
      check_tensor(tensor(l, 1), "from_vector");
      check_values(tensor(l, 1), values);
    } else if (op == "slice") {
      Tensor src = tensor(l, 2);
      Tensor v = src.slice(static_cast<int>(l.i(3)), l.i(4), l.i(5));  // dim: int, as the API takes
      check_tensor(v, "slice");
      const int dim = static_cast<int>(l.i(3));
      const int64_t start = l.i(4), len = l.i(5);
      if (start < 0 || len < 0 || static_cast<__int128>(start) + len > src.shape()[dim])
        fail(fmt::format("{}.slice({}, {}, {}) is accepted", src.describe(), dim, start, len));
      check_view(v, src, dim, start);
      tensor(l, 1) = v;
    } else if (op == "reshape") {
      Tensor src = tensor(l, 2);
      Tensor v = src.reshape(l.ints(3));
      check_tensor(v, "reshape");
      check_view(v, src, -1, 0);
      tensor(l, 1) = v;
    } else if (op == "get") {
      (void)tensor(l, 1).get(l.i(2));
    } else if (op == "set") {
      const Tensor& t = tensor(l, 1);
      t.set(l.i(2), l.f(3));
      double got = t.get(l.i(2));
      if (!same_value(got, stored(t.dtype(), l.f(3))))
        fail(fmt::format("{}.set({}, {}) then get gives {}", t.describe(), l.i(2), l.f(3), got));
    } else if (op == "tovec") {
      const Tensor& t = tensor(l, 1);
      __int128 n = exact_numel(t.shape());
      if (n < 0 || n > kMaxElements) return;
      std::vector<double> v = t.to_vector();
      if (static_cast<__int128>(v.size()) != n)
        fail(fmt::format("to_vector of {} has {} values", t.describe(), v.size()));
    } else if (op == "info") {
      info(tensor(l, 1));
    } else if (op == "copy") {
      tensor(l, 1) = tensor(l, 2);
    } else if (op == "undef") {
      tensor(l, 1) = Tensor();
    } else if (op == "launch") {
      launch(l);
    }
  }

  void create(const Line& l) {
    const std::string& op = l.op();
    Device* d = device(l, 2);
    if (!d) return;
    DType t = l.dtype(3);
    size_t first_dim = op == "empty" ? 4 : op == "full" || op == "randn" ? 5 : 6;
    if (op == "uniform") first_dim = 7;
    std::vector<int64_t> shape = l.ints(first_dim);
    if (!may_create(shape, t, *d, op != "empty")) return;
    Tensor& out = tensor(l, 1);
    if (op == "empty")
      out = Tensor::empty(*d, shape, t);
    else if (op == "full")
      out = full(*d, shape, t, l.f(4));
    else if (op == "arange")
      out = arange(*d, shape, t, l.f(4), l.f(5));
    else if (op == "randn")
      out = randn(*d, shape, t, static_cast<uint64_t>(l.i(4)));
    else
      out = uniform(*d, shape, t, static_cast<uint64_t>(l.i(4)), l.f(5), l.f(6));
    check_tensor(out, op.c_str());
    if (out.shape() != shape)
      fail(fmt::format("{} of shape [{}] made {}", op, fmt::join(shape, ", "), out.describe()));
    if (op == "full" && exact_numel(shape) > 0 && !same_value(out.get(0), stored(t, l.f(4))))
      fail(fmt::format("full({}) of {} holds {}", l.f(4), out.describe(), out.get(0)));
  }

  /// What any tensor the library hands out must be: non-negative sizes whose element count it
  /// reports exactly (an overflowed count would size its storage wrongly).
  void check_tensor(const Tensor& t, const char* made_by) {
    if (!t.defined()) fail(fmt::format("{} returned an undefined tensor", made_by));
    if (t.strides().size() != t.shape().size())
      fail(fmt::format("{} made {} with {} strides", made_by, t.describe(), t.strides().size()));
    __int128 n = exact_numel(t.shape());
    if (n < 0)
      fail(fmt::format("{} made {}: a negative or overflowing size", made_by, t.describe()));
    if (t.numel() != n)
      fail(fmt::format("{} made {} but its numel() is {}", made_by, t.describe(), t.numel()));
  }

  void check_values(const Tensor& t, const std::vector<double>& values) {
    for (size_t k = 0; k < values.size(); ++k)
      if (!same_value(t.get(static_cast<int64_t>(k)), stored(t.dtype(), values[k])))
        fail(fmt::format("from_vector: element {} of {} is {}, not {}", k, t.describe(),
                         t.get(static_cast<int64_t>(k)), values[k]));
  }

  /// A view's first and last elements are its source's: `v` is src.slice(dim, start, ...)
  /// (dim >= 0) or src.reshape(...) (dim < 0).
  void check_view(const Tensor& v, const Tensor& src, int dim, int64_t start) {
    __int128 n = exact_numel(v.shape());
    if (n <= 0 || n > INT64_MAX) return;
    for (int64_t flat : {int64_t{0}, static_cast<int64_t>(n - 1)}) {
      int64_t at = flat;
      if (dim >= 0) {
        std::vector<int64_t> idx = unravel(flat, v.shape());
        idx[dim] += start;
        at = ravel(idx, src.shape());
      }
      double a = v.get(flat), b = src.get(at);
      if (!same_value(a, b))
        fail(fmt::format("element {} of view {} is {}, but its source {} holds {} there", flat,
                         v.describe(), a, src.describe(), b));
    }
  }

  void info(const Tensor& t) {
    (void)t.describe();
    (void)t.defined();
    (void)t.device();
    (void)t.is_contiguous();
    int64_t n = t.numel();
    int64_t bytes = t.nbytes();
    if (t.defined() && exact_numel(t.shape()) != n)
      fail(fmt::format("{}.numel() is {}", t.describe(), n));
    (void)bytes;
    for (int d = 0; d < t.ndim(); ++d) (void)t.dim(d);
    if (!t.defined()) return;
    DLView v = t.dlpack();
    if (v.ndim != t.ndim() || reinterpret_cast<uintptr_t>(v.data) + v.byte_offset !=
                                  reinterpret_cast<uintptr_t>(t.data()))
      fail(fmt::format("dlpack of {} does not describe it", t.describe()));
    for (int d = 0; d < t.ndim(); ++d)
      if (v.shape[d] != t.shape()[d] || v.strides[d] != t.strides()[d])
        fail(fmt::format("dlpack of {} has another shape or strides", t.describe()));
  }

  void launch(const Line& l) {
    Device* d = device(l, 1);
    if (!d) return;
    const auto& ks = kernels();
    const CompiledKernel& k = ks[static_cast<size_t>(l.slot(2, static_cast<int>(ks.size())))];
    std::vector<Arg> args;
    for (size_t a = 3; a < l.size() && args.size() < 8; ++a) {
      const std::string& tok = l.tok(a);
      if (tok.size() > 1 && tok[0] == 't')
        args.emplace_back(t_[Line(tok.substr(1)).slot(0, kTensors)]);
      else
        args.emplace_back(std::strtod(tok.c_str(), nullptr));
    }
    // Tensors the kernel would loop over for long: the scale_rows kernel runs M rows.
    for (const Arg& a : args)
      if (auto* t = std::get_if<Tensor>(&a.value); t && t->ndim() > 0 && t->shape()[0] > 4096)
        return;
    LaunchOptions opt;
    opt.threads = 1;
    std::ostringstream out;
    opt.out = &out;
    k.launch(*d, args, opt);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    Script s;
    s.run(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const tl::InternalError& e) {
    fail(std::string("internal error: ") + e.what());
  } catch (const std::exception& e) {
    fail(std::string("exception that is not a tl::Error: ") + e.what());
  }
  return 0;
}
