// Semantics of T.printf and T.dump_tensor: lines tagged with the core, written in (block,
// core, program) order as the cores finish (print_sink.h), so the output does not depend on
// host threads.
#include "exec.h"
#include "tl/ops.h"
#include "values.h"

namespace tl::npu {
namespace {

void do_printf(const TileOpNode& n, Core& c) {
  const std::string& f = n.attr_str("fmt");
  std::string out;
  size_t arg = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%' || i + 1 >= f.size()) {
      out += f[i];
      continue;
    }
    char k = f[++i];
    if (k == '%') {
      out += '%';
      continue;
    }
    if (arg >= n.args.size()) c.fail(fmt::format("T.printf(\"{}\"): more conversions than arguments", f));
    Scalar v = c.eval(n.args[arg++].scalar);
    switch (k) {
      case 'd': case 'i': out += std::to_string(v.as_int()); break;
      case 'u': out += std::to_string(static_cast<uint64_t>(v.as_int())); break;
      case 'x': out += fmt::format("{:x}", v.as_int()); break;
      case 'f': out += fmt::format("{:f}", v.as_double()); break;
      case 'p': out += fmt::format("0x{:x}", v.as_int()); break;
      default: c.fail(fmt::format("T.printf(\"{}\"): unsupported conversion %{}", f, k));
    }
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  c.print_line(out);
}

void dump_tensor(const TileOpNode& n, Core& c) {
  TileRef t = c.operand(n, "src");
  std::string s = fmt::format("dump_tensor desc={} {} {}", n.attr_int("desc"), t.buffer->name, dtype_name(t.dtype));
  bool whole = true;
  for (size_t d = 0; d < t.shape.size(); ++d) whole &= t.start[d] == 0 && t.extent[d] == t.shape[d];
  if (!whole) {
    // A sub-region says which one it is: its elements alone are printed.
    std::string r;
    for (size_t d = 0; d < t.start.size(); ++d)
      r += fmt::format("{}{}:{}", d ? ", " : "", t.start[d], t.start[d] + t.extent[d]);
    s += " [" + r + "]";
  }
  s += " [";
  // Every memory prints the region's elements in row-major order; the fractal memories (L1,
  // L0A/B/C) are read through their layout, so the numbers are the tile's, not whatever
  // bytes (padding included) come first in storage.
  const bool nd = t.scope == MemScope::UB || t.scope == MemScope::GM;
  const int64_t es = dtype_bytes(t.dtype), total = t.numel();
  std::vector<int64_t> idx(t.start.begin(), t.start.end());
  for (int64_t i = 0; i < total; ++i) {
    const uint8_t* p = nd ? t.at_flat(i) : t.base + layout_offset(t, idx) * es;
    s += fmt::format("{}{}", i ? ", " : "", load_value(t.dtype, p));
    for (size_t d = idx.size(); d-- > 0;) {  // next index, row-major
      if (++idx[d] < t.start[d] + t.extent[d]) break;
      idx[d] = t.start[d];
    }
  }
  c.print_line(s + "]");
}

}  // namespace

std::vector<ExecEntry> debug_execs() {
  return {{&ops::printf(), do_printf}, {&ops::dump_tensor(), dump_tensor}};
}

}  // namespace tl::npu
