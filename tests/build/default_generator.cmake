# Configures SOURCE_DIR with Unix Makefiles into WORK_DIR and builds the generated frontend sources
# and the library's object of the generated parser.
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
endfunction()
file(REMOVE_RECURSE ${WORK_DIR})
step(${CMAKE_COMMAND} -G "Unix Makefiles" -S ${SOURCE_DIR} -B ${WORK_DIR} -DRTCG_BUILD_TESTS=OFF
     -DRTCG_BUILD_BENCH=OFF -DRTCG_SHARED=ON -DCUDAToolkit_ROOT=${CUDA_ROOT})
step(${CMAKE_COMMAND} --build ${WORK_DIR} --target rtcg_frontend_generated)
# The object of a generated source, through the library's own Makefile (src/).
step(${CMAKE_COMMAND} --build ${WORK_DIR}/src --target frontend/DslLexer.cpp.o)
