# Builds a copy of tests/scan/cmake_project, which uses rtcg_check_sources():
#  1. app.cpp embeds a broken kernel: the build must fail with rtcg-scan's diagnostic, before
#     app.cpp is compiled, and the manifest must be written;
#  2. with app_fixed.cpp copied over app.cpp the build must succeed;
#  3. touching kernels.h (where the fixed kernel lives) must rerun the scan (the depfile).
set(src ${WORK_DIR}/src)
set(bin ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(COPY ${PROJECT_DIR}/ DESTINATION ${src})

function(run_build expect_success)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${bin} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(expect_success AND NOT rc EQUAL 0)
    message(FATAL_ERROR "the build failed:\n${out}")
  elseif(NOT expect_success AND rc EQUAL 0)
    message(FATAL_ERROR "the build with a broken embedded kernel succeeded:\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

execute_process(
  COMMAND ${CMAKE_COMMAND} -G ${GENERATOR} -S ${src} -B ${bin} -DRTCG_SCAN_MODULE=${RTCG_SCAN_MODULE}
          -DRTCG_SCAN_EXECUTABLE=${RTCG_SCAN_EXECUTABLE} -DRTCG_INCLUDE_DIR=${RTCG_INCLUDE_DIR}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the test project failed:\n${out}")
endif()

run_build(FALSE)
set(expected "app.cpp:9:26: error: unknown name 'alpah'; did you mean 'alpha'?")
string(FIND "${out}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the build output lacks '${expected}':\n${out}")
endif()
file(GLOB_RECURSE objects ${bin}/*.o)
if(objects)
  message(FATAL_ERROR "app.cpp was compiled although its scan failed: ${objects}")
endif()
if(NOT EXISTS ${bin}/kernels.json)
  message(FATAL_ERROR "rtcg_check_sources(... MANIFEST kernels.json) wrote no manifest")
endif()
message(STATUS "step 1: the build failed as expected:\n${out}")

file(COPY_FILE ${src}/app_fixed.cpp ${src}/app.cpp)
run_build(TRUE)
file(READ ${bin}/kernels.json manifest)
if(NOT manifest MATCHES "\"kernel\": \"scale\"")
  message(FATAL_ERROR "the manifest lacks the fixed kernel:\n${manifest}")
endif()
message(STATUS "step 2: the fixed project builds")

execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)  # a newer timestamp than the stamp's
file(TOUCH ${src}/kernels.h)
run_build(TRUE)
string(FIND "${out}" "rtcg-scan: checking the kernels embedded in app" at)
if(at EQUAL -1)
  message(FATAL_ERROR "editing kernels.h did not rerun the scan:\n${out}")
endif()
message(STATUS "step 3: editing the kernel's header reran the scan")
