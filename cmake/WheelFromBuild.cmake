# The Python wheel packed from a finished build tree instead of built from source (scripts/wheel.sh;
# `pip wheel . -C cmake.define.RTCG_WHEEL_FROM_BUILD=build`): the extension, rtcgc and rtcg-worker
# as that tree built them, so that scripts/test.sh compiles the library once for its tests and for
# the package it installs. Compiles nothing (the top-level CMakeLists.txt includes this file
# before project() enables a language, and returns after it).
#   RTCG_WHEEL_FROM_BUILD   the build tree (scripts/build.sh's, with the Python extension built)
#   RTCG_WHEEL_EXTENSION    the extension to pack, if not that tree's python/rtcg/_rtcg*.so (one
#                           built for another Python against the same library: scripts/wheel.sh --python)
get_filename_component(from ${RTCG_WHEEL_FROM_BUILD} ABSOLUTE)
set(tools ${from}/tools/rtcgc/rtcgc ${from}/tools/rtcg-worker/rtcg-worker)
if(RTCG_WHEEL_EXTENSION)
  set(extension ${RTCG_WHEEL_EXTENSION})
else()
  file(GLOB extension ${from}/python/rtcg/_rtcg*.so)
endif()
foreach(f ${tools} ${extension})
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "RTCG_WHEEL_FROM_BUILD=${from}: ${f} is missing (build rtcgc, rtcg-worker and _rtcg there first)")
  endif()
endforeach()
list(LENGTH extension count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "RTCG_WHEEL_FROM_BUILD=${from}: expected one python/rtcg/_rtcg*.so, found '${extension}'")
endif()
# The extension must be the one for the Python that makes the wheel (its tag is that Python's).
get_filename_component(extension_name ${extension} NAME)
if(DEFINED SKBUILD_SOABI AND NOT extension_name MATCHES "\\.(${SKBUILD_SOABI}|abi3)\\.so$")
  message(FATAL_ERROR "${extension} is not built for this Python (${SKBUILD_SOABI}): build the wheel with the "
                      "Python the extension was built for, or give RTCG_WHEEL_EXTENSION")
endif()
install(PROGRAMS ${tools} DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
install(FILES ${extension} DESTINATION rtcg COMPONENT python)
