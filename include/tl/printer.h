// The IR text format: a printer whose output reads like a TileLang script, and (parser.h) a
// parser that reads it back. print(parse(print(f))) == print(f), and the parsed function is
// structurally equal to f.
//
// Grammar by example (indentation is 4 spaces per level; `# @file:line` comments carry the
// DSL source location of the statement on that line and are read back by the parser):
//
//   M = T.dynamic("M")                       # dynamic sizes, before the function
//   @T.prim_func
//   def name(A: T.Tensor((M, 128), "float16"), B: T.Tensor((8,), "int32", strides=(2,)),
//            eps: T.float32):
//       with T.Kernel(24, is_npu=True) as (cid, vid):
//           a = T.alloc_L1((128, 256), "float16")            # Allocate (address=N if planned)
//           acc = T.alloc_var("float32")                     # scalar variable
//           ai = T.view(a, "int16")                          # a's bytes as int16 (a view)
//           bx = cid // 4 * 128                              # Let
//           acc[0] = acc[0] + T.float16(1.5)                 # Store
//           with T.Scope("Cube"):                            # Scope
//               for k in T.serial(8):                        # For: serial/unroll/Parallel,
//                   T.copy(A[bx:bx + 128, k * 32:k * 32 + 32], a)   # Pipelined(n, num_stages=2),
//               T.set_flag("MTE2", "MTE1", 0)               # min as T.serial(n, min=m)
//           if vid == 0:
//               ...
//           else:
//               pass
//
// Expressions use Python syntax and precedence: + - * / // % (// and % are floor forms),
// comparisons, and/or/not, & | ^ << >>; T.min/T.max/T.truncdiv/T.truncmod/T.if_then_else/
// T.cast(x, "dtype")/T.exp(x)...; literals: int32 `5`, `True`/`False`, float32 `1.0`,
// `float("-inf")`; other dtypes `T.int64(5)`, `T.float16(1.5)`; strings "...". Regions
// print as `A[lo:lo + ext, ...]` (`0:ext` when lo is 0, `lo:hi` when both are int32
// literals) and as the bare buffer name when they cover the whole buffer. Tile ops print
// operands positionally and attributes that differ from their defaults as keywords.
#pragma once

#include <string>

#include "tl/ir.h"

namespace tl {

struct PrintOptions {
  bool locations = true;  // append `# @file:line` to each statement line
};

std::string print(const PrimFunc& f, const PrintOptions& opt = {});
std::string print(const Stmt& s, const PrintOptions& opt = {});
std::string print(const Expr& e);
std::string print(const BufferRegion& r);

}  // namespace tl
