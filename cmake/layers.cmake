# The library's modules, one static library each, and the layer rule that keeps them acyclic
# (docs/architecture.md). Included by the top-level CMakeLists.txt after find_package.
#
# tl_module(NAME ... SOURCES ... DEPS ... HEADERS ...) declares a module: its sources, the
# modules directly below it that it may use (their own dependencies come with them), and the
# public headers (under include/) it owns. Modules must be declared bottom-up: a DEPS entry
# naming a module not declared yet is a back edge and stops the configure. Each module is:
#   tl_<name>_obj         an OBJECT library (the sources compile once),
#   tl_<name>             a STATIC library of those objects, linked PUBLIC to its DEPS (what the
#                         umbrella target `tl` and so every tool, test and the Python extension
#                         link),
#   tl_<name>_layercheck  a SHARED library of the same objects, linked only to its DEPS'
#                         layercheck libraries with -Wl,--no-undefined: it links only if the module
#                         needs nothing outside the modules below it. Static libraries cannot show
#                         this (a circular use links by accident of link order). Not built by
#                         default; the ctest entry layers_link builds them all (tests/layers/).
# The graph and the header map are also written to ${CMAKE_BINARY_DIR}/layers.json for
# scripts/check_layers.py, which checks the #include lines against the same rule.

set(TL_LAYER_MODULES "")
set(TL_LAYER_JSON "")

function(tl_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS;HEADERS;PRIVATE_LIBS" ${ARGN})
  foreach(d IN LISTS M_DEPS)
    if(NOT d IN_LIST TL_LAYER_MODULES)
      message(FATAL_ERROR "module ${name} depends on ${d}, which is not declared below it "
                          "(a back edge or a typo; docs/architecture.md)")
    endif()
  endforeach()
  add_library(tl_${name}_obj OBJECT ${M_SOURCES})
  target_include_directories(tl_${name}_obj PUBLIC ${CMAKE_SOURCE_DIR}/include)
  target_link_libraries(tl_${name}_obj PUBLIC fmt::fmt Threads::Threads PRIVATE ${M_PRIVATE_LIBS})

  add_library(tl_${name} STATIC $<TARGET_OBJECTS:tl_${name}_obj>)
  target_include_directories(tl_${name} PUBLIC ${CMAKE_SOURCE_DIR}/include)
  target_link_libraries(tl_${name} PUBLIC fmt::fmt Threads::Threads PRIVATE ${M_PRIVATE_LIBS})

  add_library(tl_${name}_layercheck SHARED EXCLUDE_FROM_ALL $<TARGET_OBJECTS:tl_${name}_obj>)
  target_link_libraries(tl_${name}_layercheck PUBLIC fmt::fmt Threads::Threads PRIVATE ${M_PRIVATE_LIBS})
  target_include_directories(tl_${name}_layercheck PUBLIC ${CMAKE_SOURCE_DIR}/include)
  target_link_options(tl_${name}_layercheck PRIVATE -Wl,--no-undefined)
  foreach(d IN LISTS M_DEPS)
    if(d STREQUAL "prims")
      # The primitives register from static initialisers: linked whole, as by the umbrella.
      target_link_libraries(tl_${name} PUBLIC "$<LINK_LIBRARY:WHOLE_ARCHIVE,tl_prims>")
    else()
      target_link_libraries(tl_${name} PUBLIC tl_${d})
    endif()
    # PUBLIC: a module's layercheck library brings its own dependencies onto the link line of
    # the modules above, so each module links against everything below it, and nothing else.
    target_link_libraries(tl_${name}_layercheck PUBLIC tl_${d}_layercheck)
  endforeach()

  set(TL_LAYER_MODULES ${TL_LAYER_MODULES} ${name} PARENT_SCOPE)
  list(TRANSFORM M_DEPS PREPEND "\"")
  list(TRANSFORM M_DEPS APPEND "\"")
  list(JOIN M_DEPS ", " deps_json)
  list(TRANSFORM M_HEADERS PREPEND "\"")
  list(TRANSFORM M_HEADERS APPEND "\"")
  list(JOIN M_HEADERS ", " headers_json)
  set(dirs "")
  foreach(s IN LISTS M_SOURCES)
    if(NOT IS_ABSOLUTE ${s})
      continue()
    endif()
    file(RELATIVE_PATH r ${CMAKE_SOURCE_DIR} ${s})
    list(APPEND dirs "\"${r}\"")
  endforeach()
  list(JOIN dirs ", " sources_json)
  set(TL_LAYER_JSON "${TL_LAYER_JSON}${TL_LAYER_SEP}\n  {\"name\": \"${name}\", \"deps\": [${deps_json}], \"headers\": [${headers_json}], \"sources\": [${sources_json}]}" PARENT_SCOPE)
  set(TL_LAYER_SEP "," PARENT_SCOPE)
endfunction()

set(S ${CMAKE_SOURCE_DIR}/src)
file(GLOB TL_SUPPORT_SOURCES CONFIGURE_DEPENDS ${S}/support/*.cpp)
# The text-IR parser is its own module above op (it builds tile ops through the op registry);
# it stays in src/ir/ so that its history is kept: every src/ir/parser*.cpp belongs to it.
file(GLOB TL_PARSER_SOURCES CONFIGURE_DEPENDS ${S}/ir/parser*.cpp)
file(GLOB TL_IR_SOURCES CONFIGURE_DEPENDS ${S}/ir/*.cpp)
list(REMOVE_ITEM TL_IR_SOURCES ${TL_PARSER_SOURCES})
file(GLOB TL_ARITH_SOURCES CONFIGURE_DEPENDS ${S}/arith/*.cpp)
file(GLOB TL_TARGET_SOURCES CONFIGURE_DEPENDS ${S}/target/*.cpp)
file(GLOB TL_LAYOUT_SOURCES CONFIGURE_DEPENDS ${S}/layout/*.cpp)
file(GLOB TL_OP_SOURCES CONFIGURE_DEPENDS ${S}/op/*.cpp)
file(GLOB TL_VERIFY_SOURCES CONFIGURE_DEPENDS ${S}/verify/*.cpp)
file(GLOB TL_ANALYSIS_SOURCES CONFIGURE_DEPENDS ${S}/analysis/*.cpp)
file(GLOB TL_TRANSFORM_SOURCES CONFIGURE_DEPENDS ${S}/pass/*.cpp)
file(GLOB TL_JIT_SOURCES CONFIGURE_DEPENDS ${S}/jit/*.cpp)
file(GLOB TL_RUNTIME_SOURCES CONFIGURE_DEPENDS ${S}/runtime/*.cpp)
file(GLOB TL_NPU_SOURCES CONFIGURE_DEPENDS ${S}/npu/*.cpp)
file(GLOB TL_LANG_SOURCES CONFIGURE_DEPENDS ${S}/lang/*.cpp)
file(GLOB TL_ASCENDC_SOURCES CONFIGURE_DEPENDS ${S}/ascendc/*.cpp)
file(GLOB TL_ASCENDC_CPU_SOURCES CONFIGURE_DEPENDS ${S}/ascendc_cpu/*.cpp)
# One file per primitive (docs/architecture.md, "The prims layer"): a new file is picked up here.
file(GLOB TL_PRIMS_SOURCES CONFIGURE_DEPENDS ${S}/prims/*.cpp)

# Bottom-up. HEADERS: the public headers each module owns (a module may include its own and
# those of the modules below it; scripts/check_layers.py).
tl_module(support SOURCES ${TL_SUPPORT_SOURCES}
          HEADERS tl/error.h tl/loc.h tl/dtype.h tl/env.h tl/npu/numerics.h)
tl_module(ir SOURCES ${TL_IR_SOURCES} DEPS support
          HEADERS tl/ir.h tl/ir_functor.h tl/ir_equal.h tl/printer.h tl/kernel_registry.h)
tl_module(arith SOURCES ${TL_ARITH_SOURCES} DEPS ir
          HEADERS tl/arith.h tl/ir_ops.h tl/linear.h tl/intrinsics.def)
tl_module(target SOURCES ${TL_TARGET_SOURCES} DEPS ir HEADERS tl/target.h)
tl_module(layout SOURCES ${TL_LAYOUT_SOURCES} DEPS target HEADERS tl/storage.h tl/npu/layout.h)
tl_module(op SOURCES ${TL_OP_SOURCES} DEPS arith target
          HEADERS tl/op.h tl/ops.h tl/op_list.def tl/sync_rules.h tl/vector_ops.def
          tl/shape_rules.h)
tl_module(parser SOURCES ${TL_PARSER_SOURCES} DEPS op HEADERS tl/parser.h)
tl_module(verify SOURCES ${TL_VERIFY_SOURCES} DEPS op layout HEADERS tl/verifier.h)
# What a statement touches, and the block replay that proves syncs implied (src/analysis/).
tl_module(analysis SOURCES ${TL_ANALYSIS_SOURCES} DEPS op layout HEADERS tl/access.h tl/replay.h)
tl_module(transform SOURCES ${TL_TRANSFORM_SOURCES} DEPS verify parser analysis HEADERS tl/pass.h tl/pass_registry.h tl/far_flag_ids.h)
# tl::build_id() is the JIT disk cache's key, so the generated file belongs to jit.
tl_module(jit SOURCES ${TL_JIT_SOURCES} ${TL_BUILD_ID_CPP} DEPS transform
          HEADERS tl/jit.h tl/backend.h PRIVATE_LIBS nlohmann_json::nlohmann_json)
tl_module(runtime SOURCES ${TL_RUNTIME_SOURCES} DEPS target HEADERS tl/runtime.h tl/gm_fill.h)
tl_module(npu SOURCES ${TL_NPU_SOURCES} DEPS jit runtime
          HEADERS tl/npu/npu.h tl/npu/direct.h tl/npu/hazard.h tl/npu/report.h tl/npu/semantics.h tl/npu/stale.h
                  tl/npu/timing.h tl/npu/trace.h tl/npu/cube_math.h tl/npu/cache_aligned.h
                  tl/npu/range_index.h
          PRIVATE_LIBS ${OPENBLAS_LIB})
# The AscendC backend (docs/ascendc.md): lowered kernels as AscendC source, beside the NPU.
tl_module(ascendc SOURCES ${TL_ASCENDC_SOURCES} DEPS jit HEADERS tl/ascendc.h)
# The AscendC CPU model (docs/ascendc.md "CPU model"): AscendC calls executed on the virtual
# NPU through tl/npu/direct.h; emitted AscendC files include include/ascendc_cpu/kernel_operator.h.
tl_module(ascendc_cpu SOURCES ${TL_ASCENDC_CPU_SOURCES} DEPS npu
          HEADERS ascendc_cpu/model.h ascendc_cpu/kernel_operator.h
                  ascendc_cpu/kernel_operator_calls.h ascendc_cpu/kernel_operator_cube.h
                  ascendc_cpu/kernel_operator_sort.h ascendc_cpu/model_sort.h
                  ascendc_cpu/kernel_operator_bitwise.h)
tl_module(lang SOURCES ${TL_LANG_SOURCES} DEPS parser HEADERS tl/lang.h)
# The primitives, each one file registering its parts into the registries of the modules below
# (op, verify, npu) and defining its DSL call (declared in tl/lang.h). Declared last: nothing
# below names a primitive.
tl_module(prims SOURCES ${TL_PRIMS_SOURCES} DEPS npu verify lang)
# The operator library cann_ops_tilelang (docs/ops.md): above everything, a client of the
# compiler and the runtime; not part of the umbrella `tl` (the compiler does not need it). Its
# CMake target is `cann_ops_tilelang` (an alias of tl_cann_ops_tilelang), one source folder per
# domain under cann_ops_tilelang/.
file(GLOB_RECURSE TL_OPSLIB_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/cann_ops_tilelang/*.cpp)
tl_module(cann_ops_tilelang SOURCES ${TL_OPSLIB_SOURCES} DEPS prims
          HEADERS cann_ops_tilelang/core.h cann_ops_tilelang/norm.h
                  cann_ops_tilelang/activation.h
                  cann_ops_tilelang/softmax.h
                  cann_ops_tilelang/moe.h cann_ops_tilelang/gemm.h
                  cann_ops_tilelang/rope.h
                  cann_ops_tilelang/attention.h)

# The umbrella every tool, test and the Python extension links: all modules. The primitives
# register themselves from static initialisers that nothing references, so their library is
# linked whole (a plain static library would lose every object no symbol pulls in).
add_library(tl INTERFACE)
foreach(m IN LISTS TL_LAYER_MODULES)
  if(m STREQUAL "cann_ops_tilelang" OR m STREQUAL "ascendc_cpu")
    # Clients of the library, not part of the compiler: linked by whoever uses them (the
    # AscendC CPU model by its tests, docs/ascendc.md).
    continue()
  elseif(m STREQUAL "prims")
    target_link_libraries(tl INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,tl_prims>")
  else()
    target_link_libraries(tl INTERFACE tl_${m})
  endif()
endforeach()

add_custom_target(tl_layer_check)
foreach(m IN LISTS TL_LAYER_MODULES)
  add_dependencies(tl_layer_check tl_${m}_layercheck)
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/layers.json "{\"modules\": [${TL_LAYER_JSON}\n]}\n")

# Programs linking the operator library get every primitive too (the whole-archive umbrella).
target_link_libraries(tl_cann_ops_tilelang INTERFACE tl)
add_library(cann_ops_tilelang ALIAS tl_cann_ops_tilelang)

# The virtual NPU's element loops (src/npu/exec_*.cpp, the conversions of src/support) are written
# to vectorise, but GCC 12 at -O2 (the default RelWithDebInfo build) applies its "very cheap"
# vectoriser cost model, which leaves every loop of unknown trip count scalar: the "8 lanes wide"
# fp32 row loops ran one element at a time. The dynamic model vectorises them. Results do not
# change: the vectoriser keeps each element's IEEE operations (no reassociation without
# -ffast-math; no FMA contraction on the baseline and AVX2 targets, which have no FMA).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(tl_npu_obj PRIVATE -fvect-cost-model=dynamic)
  target_compile_options(tl_support_obj PRIVATE -fvect-cost-model=dynamic)
endif()
