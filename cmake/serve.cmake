# `dial9 serve`: the HTTP server for the viewer and the traces (src/serve/), built as its own
# executable, dial9-serve, when libmicrohttpd is found (Debian: libmicrohttpd-dev). `dial9 serve`
# execs it (src/cli/cmd_serve.c), so libmicrohttpd and the TLS libraries behind it are loaded by
# the server alone, not by every `dial9` command (`dial9 run` would add them to the start of the
# program it records). Optional: without libmicrohttpd `dial9 serve` says so and everything else
# builds as before.
# Included from the top-level CMakeLists.txt after the `dial9` target is defined.
if(NOT TARGET dial9)
  return()
endif()
set(D9_SERVE_DIR ${PROJECT_SOURCE_DIR}/src/serve)
# The options (usage, defaults, parsing): `dial9 serve` answers --help and bad arguments even
# without the server, and dial9-serve parses its arguments with the same code. The selection
# file too: `dial9 serve --bucket` writes it, dial9-serve reads it, and dial9's fetch step reads
# what dial9-serve asks it to fetch in the same format.
add_library(dial9_serve_options STATIC ${D9_SERVE_DIR}/serve_options.c ${D9_SERVE_DIR}/serve_selection.c)
target_include_directories(dial9_serve_options PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(dial9_serve_options PRIVATE dial9_common)
# D9_WITH_MHD = AUTO / ON / OFF (cmake/dependency_options.cmake).
d9_dependency_wanted(MHD d9_look)
find_package(PkgConfig QUIET)
if(d9_look AND PkgConfig_FOUND)
  pkg_check_modules(MHD QUIET IMPORTED_TARGET libmicrohttpd)
endif()
d9_dependency_result(MHD "${MHD_FOUND}" "apt-get install libmicrohttpd-dev" "`dial9 serve` (dial9-serve)")
if(D9_USE_MHD)
  # the server's parts, in a library that its own tests link too (each file compiled once)
  add_library(dial9_serve STATIC
    ${D9_SERVE_DIR}/cache_pin.c ${D9_SERVE_DIR}/conn_guard.c ${D9_SERVE_DIR}/dump_info.c ${D9_SERVE_DIR}/fetch_jobs.c
    ${D9_SERVE_DIR}/host_check.c ${D9_SERVE_DIR}/http_server.c
    ${D9_SERVE_DIR}/open_beneath.c ${D9_SERVE_DIR}/safe_path.c ${D9_SERVE_DIR}/segment_concat.c
    ${D9_SERVE_DIR}/instance_window.c ${D9_SERVE_DIR}/trace_index.c ${D9_SERVE_DIR}/url.c)
  target_include_directories(dial9_serve PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(dial9_serve PUBLIC dial9_serve_options dial9_reader PkgConfig::MHD)
  add_executable(dial9-serve ${D9_SERVE_DIR}/serve_main.c)
  target_compile_definitions(dial9-serve PRIVATE
    D9_SERVE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    D9_SERVE_VIEWER_INSTALL_DIR="${CMAKE_INSTALL_FULL_DATADIR}/dial9/viewer")
  target_link_libraries(dial9-serve PRIVATE dial9_serve)
  # next to `dial9` in the build directory (same directory, same output settings); installed
  # out of PATH, in libexec, from where the viewer is ../share/dial9/viewer as from bin
  install(TARGETS dial9-serve RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR})
  file(RELATIVE_PATH D9_SERVE_BIN_TO_LIBEXEC "${CMAKE_INSTALL_FULL_BINDIR}" "${CMAKE_INSTALL_FULL_LIBEXECDIR}")
  if(D9_SERVE_BIN_TO_LIBEXEC STREQUAL "")
    set(D9_SERVE_BIN_TO_LIBEXEC ".")
  endif()
  target_compile_definitions(dial9 PRIVATE D9_SERVE_BUILT D9_SERVE_BIN_TO_LIBEXEC="${D9_SERVE_BIN_TO_LIBEXEC}")
  add_dependencies(dial9 dial9-serve) # building `dial9` gives a working `dial9 serve`
  message(STATUS "dial9 serve: libmicrohttpd ${MHD_VERSION} (dial9-serve)")
  if(BUILD_TESTING) # tests/serve/: the server's own unit test and the helpers of its script tests
    add_executable(test_serve_open_beneath ${PROJECT_SOURCE_DIR}/tests/serve/test_serve_open_beneath.c)
    target_include_directories(test_serve_open_beneath PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    target_link_libraries(test_serve_open_beneath PRIVATE dial9_serve)
    add_test(NAME test_serve_open_beneath COMMAND test_serve_open_beneath)
    set_tests_properties(test_serve_open_beneath PROPERTIES TIMEOUT 60)
    add_executable(test_serve_host_check ${PROJECT_SOURCE_DIR}/tests/serve/test_serve_host_check.c)
    target_include_directories(test_serve_host_check PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    target_link_libraries(test_serve_host_check PRIVATE dial9_serve)
    add_test(NAME test_serve_host_check COMMAND test_serve_host_check)
    set_tests_properties(test_serve_host_check PROPERTIES TIMEOUT 60)
    add_executable(test_serve_fetch_jobs ${PROJECT_SOURCE_DIR}/tests/serve/test_serve_fetch_jobs.c)
    target_include_directories(test_serve_fetch_jobs PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    target_link_libraries(test_serve_fetch_jobs PRIVATE dial9_serve)
    add_test(NAME test_serve_fetch_jobs COMMAND test_serve_fetch_jobs)
    set_tests_properties(test_serve_fetch_jobs PROPERTIES TIMEOUT 60)
    add_executable(test_serve_conn_guard ${PROJECT_SOURCE_DIR}/tests/serve/test_serve_conn_guard.c)
    target_include_directories(test_serve_conn_guard PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    target_link_libraries(test_serve_conn_guard PRIVATE dial9_serve)
    add_test(NAME test_serve_conn_guard COMMAND test_serve_conn_guard)
    set_tests_properties(test_serve_conn_guard PROPERTIES TIMEOUT 60)
    add_executable(test_serve_trace_index_key ${PROJECT_SOURCE_DIR}/tests/serve/test_serve_trace_index_key.c)
    target_include_directories(test_serve_trace_index_key PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    target_link_libraries(test_serve_trace_index_key PRIVATE dial9_serve)
    add_test(NAME test_serve_trace_index_key COMMAND test_serve_trace_index_key)
    set_tests_properties(test_serve_trace_index_key PROPERTIES TIMEOUT 60)
    add_executable(test_serve_parse_utc ${PROJECT_SOURCE_DIR}/tests/serve/test_serve_parse_utc.c)
    target_include_directories(test_serve_parse_utc PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    target_link_libraries(test_serve_parse_utc PRIVATE dial9_serve)
    add_test(NAME test_serve_parse_utc COMMAND test_serve_parse_utc)
    set_tests_properties(test_serve_parse_utc PROPERTIES TIMEOUT 60)
    add_executable(d9s_race ${PROJECT_SOURCE_DIR}/tests/serve/d9s_race.c)
    add_executable(d9s_slow_clients ${PROJECT_SOURCE_DIR}/tests/serve/d9s_slow_clients.c)
    add_executable(d9s_connect_storm ${PROJECT_SOURCE_DIR}/tests/serve/d9s_connect_storm.c)
    target_link_libraries(d9s_connect_storm PRIVATE Threads::Threads)
  endif()
endif()
# the viewer's files, for `dial9 serve` of an installed dial9 (../share/dial9/viewer)
if(EXISTS ${PROJECT_SOURCE_DIR}/viewer/index.html)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/viewer/ DESTINATION ${CMAKE_INSTALL_DATADIR}/dial9/viewer
          PATTERN node_modules EXCLUDE PATTERN test EXCLUDE PATTERN browser-test EXCLUDE
          PATTERN tools EXCLUDE PATTERN test-artifacts EXCLUDE PATTERN "package*.json" EXCLUDE
          PATTERN ".*" EXCLUDE)
endif()
