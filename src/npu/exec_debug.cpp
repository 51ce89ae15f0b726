// Semantics of T.printf and T.dump_tensor: lines tagged with the core, printed at the end of
// the launch in (block, core, program) order so the output does not depend on host threads.
#include "exec.h"
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
  std::string s = fmt::format("dump_tensor desc={} {} {} [", n.attr_int("desc"), t.buffer->name, dtype_name(t.dtype));
  if (t.scope == MemScope::UB || t.scope == MemScope::GM) {
    for (int64_t i = 0; i < t.numel(); ++i)
      s += fmt::format("{}{}", i ? ", " : "", load_value(t.dtype, t.at_flat(i)));
  } else {
    // Fractal memories are dumped in storage order, as DumpTensor shows them.
    int64_t es = dtype_bytes(t.dtype);
    for (int64_t i = 0; i < t.numel(); ++i)
      s += fmt::format("{}{}", i ? ", " : "", load_value(t.dtype, t.base + i * es));
  }
  c.print_line(s + "]");
}

}  // namespace

std::vector<ExecEntry> debug_execs() { return {{"printf", do_printf}, {"dump_tensor", dump_tensor}}; }

}  // namespace tl::npu
