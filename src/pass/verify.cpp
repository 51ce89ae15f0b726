// The verify pass: the expert-mode spec (tl/verifier.h) as a pipeline step.
#include "tl/pass.h"
#include "tl/verifier.h"

namespace tl {

PrimFunc verify_pass(const PrimFunc& f, const Target& target) {
  verify_or_throw(f, target);
  return f;
}

}  // namespace tl
