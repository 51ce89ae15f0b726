// keep_far_flag_ids for one of TileLang-Ascend's code generators: what tl_ascend.compile runs on a
// kernel built for target "pto", "ascendc" or "auto" before verification (docs/compiler.md, "Event
// ids past 7 under TileLang-Ascend's targets"; src/pass/far_flag_ids.cpp). The three-argument
// form in tl/pass.h is this one with codegen "pto".
#pragma once

#include <string>

#include "tl/pass.h"

namespace tl {

/// The flags of a pipe pair whose event ids lie past the target's range (TileLang-Ascend's pto
/// code generator drops them, its ascendc one passes them to AscendC unchanged) move by one
/// constant shift onto ids that pair does not use, with a remark each pair. With no such ids
/// left, far flags that are each a set_flag followed at once by its wait_flag take the id of
/// their low three bits (a set of a flag still set there stops the launch). Otherwise the pair
/// keeps its ids (the verifier's event-id-range error). `codegen`: "pto" or "ascendc" (the
/// remark says which), anything else a tl::Error.
PrimFunc keep_far_flag_ids(const PrimFunc& f, const Target& target, const RemarkSink& remark,
                           const std::string& codegen);

}  // namespace tl
