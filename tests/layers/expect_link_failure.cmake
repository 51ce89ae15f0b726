# Builds one target of a configured build tree and expects the link to fail on an undefined
# reference to `EXPECT` (the deliberate back edge of back_edge_probe.cpp):
#   cmake -DBUILD_DIR=<build> -DTARGET=<target> -DEXPECT=<text> -P expect_link_failure.cmake
# Passes only when the build fails for that reason, so a probe that fails to compile, or links
# because the layer check stopped working, fails the test.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}\n${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "${TARGET} linked: the deliberate back edge was not caught\n${all}")
endif()
string(FIND "${all}" "undefined reference to `${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${TARGET} failed, but not on an undefined reference to ${EXPECT}:\n${all}")
endif()
message(STATUS "${TARGET}: the back edge fails to link, as it must (undefined reference to ${EXPECT})")
