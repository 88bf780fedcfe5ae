# A build without Bison and re2c: writes the lexer and parser with scripts/frontend-sources.sh into
# WORK_DIR/gen, configures SOURCE_DIR with RTCG_GENERATED_FRONTEND_DIR pointing there (Bison and
# re2c are then not looked for) and compiles the frontend's objects from the copied sources.
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
endfunction()
file(REMOVE_RECURSE ${WORK_DIR})
step(${SOURCE_DIR}/scripts/frontend-sources.sh ${WORK_DIR}/gen)
step(${CMAKE_COMMAND} -G Ninja -S ${SOURCE_DIR} -B ${WORK_DIR}/build -DRTCG_GENERATED_FRONTEND_DIR=${WORK_DIR}/gen
     -DRTCG_BUILD_TESTS=OFF -DRTCG_BUILD_BENCH=OFF -DRTCG_BUILD_SCAN=OFF -DRTCG_PYTHON=OFF -DCUDAToolkit_ROOT=${CUDA_ROOT})
file(READ ${WORK_DIR}/build/CMakeCache.txt cache)
if(cache MATCHES "BISON_EXECUTABLE:")
  message(FATAL_ERROR "Bison was looked for although RTCG_GENERATED_FRONTEND_DIR was given")
endif()
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build --target src/CMakeFiles/rtcg.dir/frontend/DslParser.cpp.o
     src/CMakeFiles/rtcg.dir/frontend/DslLexer.cpp.o)
