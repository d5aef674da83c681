# `dial9 serve`: the HTTP server for the viewer and the traces (src/serve/), built into the
# `dial9` command when libmicrohttpd is found (Debian: libmicrohttpd-dev). Optional: without
# it `dial9 serve` says so and everything else builds as before.
# Included from the top-level CMakeLists.txt after the `dial9` target is defined.
if(NOT TARGET dial9)
  return()
endif()
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(MHD QUIET IMPORTED_TARGET libmicrohttpd)
endif()
if(MHD_FOUND)
  file(GLOB D9_SERVE_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/serve/*.c)
  target_sources(dial9 PRIVATE ${D9_SERVE_SOURCES})
  target_compile_definitions(dial9 PRIVATE D9_HAVE_MHD
    D9_SERVE_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    D9_SERVE_VIEWER_INSTALL_DIR="${CMAKE_INSTALL_FULL_DATADIR}/dial9/viewer")
  target_link_libraries(dial9 PRIVATE PkgConfig::MHD)
  message(STATUS "dial9 serve: libmicrohttpd ${MHD_VERSION}")
else()
  message(STATUS "dial9 serve: libmicrohttpd not found (apt-get install libmicrohttpd-dev): `dial9 serve` disabled")
endif()
# the viewer's files, for `dial9 serve` of an installed dial9 (../share/dial9/viewer)
if(EXISTS ${CMAKE_SOURCE_DIR}/viewer/index.html)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/viewer/ DESTINATION ${CMAKE_INSTALL_DATADIR}/dial9/viewer
          PATTERN node_modules EXCLUDE PATTERN test EXCLUDE PATTERN browser-test EXCLUDE
          PATTERN tools EXCLUDE PATTERN test-artifacts EXCLUDE PATTERN "package*.json" EXCLUDE
          PATTERN ".*" EXCLUDE)
endif()
