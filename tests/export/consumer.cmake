# Exports axpby for sm_80 and sm_90, then configures and builds tests/export/consumer against it.
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
endfunction()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
step(${RTCGC} export ${SOURCE_DIR}/examples/axpby.rtcg -D n=1000 --arch sm_80,sm_90 -o ${WORK_DIR}/export)
step(${CMAKE_COMMAND} -G ${GENERATOR} -S ${SOURCE_DIR}/tests/export/consumer -B ${WORK_DIR}/build
     -DRTCG_EXPORT_DIR=${WORK_DIR}/export -DCUDAToolkit_ROOT=${CUDA_ROOT})
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
