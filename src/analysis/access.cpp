// The access analysis (tl/access.h): a tile op's instructions and operand uses from its OpDef,
// and the buffers a statement touches. The order of the uses is the expansion's (each touch of
// an InstrSpec, each argument of a variadic operand): clients number their accesses in it.
#include "tl/access.h"

#include <algorithm>

#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/storage.h"
#include "tl/sync_rules.h"

namespace tl::analysis {

std::vector<Instr> instructions(const TileOpNode& n, const Target& t) {
  const OpDef& op = *n.op;
  std::vector<Instr> out;
  out.reserve(op.expansion.size());
  for (size_t i = 0; i < op.expansion.size(); ++i) {
    const InstrSpec& spec = op.expansion[i];
    Instr in;
    in.index = i;
    if (spec.kind == InstrSpec::Kind::BarrierAll) {
      in.barrier_all = true;
      in.pipe = Pipe::ALL;
      out.push_back(std::move(in));
      continue;
    }
    in.pipe = instr_pipe(n, spec, t);
    for (const auto& tc : spec.touches) {
      const bool read = tc.access != Access::Write, write = tc.access != Access::Read;
      if (tc.operand < 0) {
        in.uses.push_back({Use::Scratch, -1, tc.scratch, read, write});
        continue;
      }
      // A variadic operand repeats to the end of the arguments.
      size_t hi = op.operands[tc.operand].variadic
                      ? n.args.size()
                      : std::min(n.args.size(), static_cast<size_t>(tc.operand) + 1);
      for (size_t a = static_cast<size_t>(tc.operand); a < hi; ++a)
        in.uses.push_back(n.args[a].is_region()
                              ? Use{Use::Region, static_cast<int>(a), MemScope::GM, read, write}
                              : Use{Use::Scalar, static_cast<int>(a), MemScope::GM, true, false});
    }
    out.push_back(std::move(in));
  }
  return out;
}

std::pair<int64_t, int64_t> bytes_between(MemScope s, DType t, const std::vector<int64_t>& shape,
                                          const std::vector<int64_t>& first,
                                          const std::vector<int64_t>& last) {
  const int64_t es = dtype_bytes(t);
  return {storage_element_offset(s, t, shape, first) * es,
          (storage_element_offset(s, t, shape, last) + 1) * es};
}

namespace {
bool constant_true(const Expr& e) {
  auto v = as_const_int(e);
  return v && *v != 0;
}
}  // namespace

std::vector<Touch> touches_of(const Stmt& s, const Target& t) {
  std::vector<Touch> out;
  pre_order_visit(
      s,
      [&](const Stmt& x) {
        if (auto* op = x.as<TileOpNode>()) {
          const Pipe pipe = op->op->pipe ? op->op->pipe(*op, t) : Pipe::S;
          const auto& specs = op->op->operands;
          for (size_t i = 0; i < op->args.size() && !specs.empty(); ++i) {
            if (!op->args[i].is_region()) continue;
            const OperandSpec& spec = specs[std::min(i, specs.size() - 1)];
            Access access = spec.access;
            // mma(init=True) overwrites its accumulator: the read of C is only for init=False.
            if (op->op == &ops::mma() && spec.name == "C")
              if (const TileArg* init = op_operand(*op, "init");
                  init && init->is_scalar() && constant_true(init->scalar))
                access = Access::Write;
            out.push_back({op->args[i].region.buffer.get(), pipe, access != Access::Write,
                           access != Access::Read});
          }
        } else if (auto* st = x.as<StoreNode>()) {
          out.push_back({st->buffer.get(), Pipe::S, false, true});
        }
      },
      [&](const Expr& e) {
        if (auto* l = e.as<LoadNode>()) out.push_back({l->buffer.get(), Pipe::S, true, false});
      });
  return out;
}

}  // namespace tl::analysis
