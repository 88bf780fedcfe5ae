# rtcg_check_sources(<target>... [MANIFEST file]): checks the rtcg DSL kernels embedded in the
# targets' C++ sources at build time with rtcg-scan. A DSL error (or a kernel call with the wrong
# arguments) fails the build with `file.cpp:line:col: error: ...` at the position inside the string
# literal. MANIFEST writes every kernel found to a JSON file, for `rtcgc tune --manifest file`.
#
#   include(RtcgScan)            # in the rtcg tree, or from the installed package's cmake directory
#   add_executable(app app.cpp)
#   rtcg_check_sources(app)                      # options: MANIFEST <file.json>
#   rtcg_check_sources(app1 app2 MANIFEST kernels.json)   # one scan, one manifest for both
#
# The scan reads the compile commands of the build (compile_commands.json, which this function
# turns on for the target), so it needs a Makefile or Ninja generator. It runs before the target
# is compiled and again when one of its sources, or a header a kernel of it is defined in, changes.
# Several targets given together are scanned in one step (each depends on it), so that one
# manifest lists the kernels of all of them.
include_guard(GLOBAL)

function(rtcg_check_sources)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "MANIFEST" "")
  set(targets ${ARG_UNPARSED_ARGUMENTS})
  if(NOT targets)
    message(FATAL_ERROR "rtcg_check_sources: name at least one target")
  endif()
  list(JOIN targets ", " target)  # for messages
  list(JOIN targets "-" name)     # for the stamp and the scan's target
  if(TARGET rtcg-scan)
    set(scan $<TARGET_FILE:rtcg-scan>)
    set(scan_dependency rtcg-scan)
  else()
    find_program(RTCG_SCAN_EXECUTABLE rtcg-scan HINTS ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../../../bin)
    if(NOT RTCG_SCAN_EXECUTABLE)
      message(FATAL_ERROR "rtcg_check_sources(${target}): rtcg-scan not found; set RTCG_SCAN_EXECUTABLE")
    endif()
    set(scan ${RTCG_SCAN_EXECUTABLE})
    set(scan_dependency ${RTCG_SCAN_EXECUTABLE})
  endif()

  # The targets' C++ sources, as absolute paths (how compile_commands.json names them).
  set(files "")
  foreach(t IN LISTS targets)
    get_target_property(sources ${t} SOURCES)
    get_target_property(source_dir ${t} SOURCE_DIR)
    foreach(source IN LISTS sources)
      if(source MATCHES "\\.(cpp|cc|cxx|C|c\\+\\+)$" AND NOT source MATCHES "^\\$<")
        get_filename_component(path ${source} ABSOLUTE BASE_DIR ${source_dir})
        list(APPEND files ${path})
      endif()
    endforeach()
    set_property(TARGET ${t} PROPERTY EXPORT_COMPILE_COMMANDS ON)
  endforeach()
  list(REMOVE_DUPLICATES files)
  if(NOT files)
    message(WARNING "rtcg_check_sources(${target}): no C++ sources to scan")
    return()
  endif()

  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${name}.rtcg-scan.stamp)
  set(manifest_args "")
  set(byproducts "")
  if(ARG_MANIFEST)
    get_filename_component(manifest ${ARG_MANIFEST} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_BINARY_DIR})
    set(manifest_args --manifest ${manifest})
    set(byproducts BYPRODUCTS ${manifest})
  endif()
  # The depfile adds the headers kernels were found in, so editing one reruns the scan.
  add_custom_command(OUTPUT ${stamp} ${byproducts}
    COMMAND ${scan} -p ${CMAKE_BINARY_DIR} ${manifest_args} --depfile ${stamp}.d --depfile-target ${stamp} ${files}
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${files} ${scan_dependency}
    DEPFILE ${stamp}.d
    COMMENT "rtcg-scan: checking the kernels embedded in ${target}"
    VERBATIM)
  add_custom_target(${name}_rtcg_scan DEPENDS ${stamp})
  foreach(t IN LISTS targets)
    add_dependencies(${t} ${name}_rtcg_scan)
  endforeach()
endfunction()
