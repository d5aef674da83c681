# D9_WITH_LIBUV, _LIBEVENT, _LIBEV, _LIBDW, _MHD: each optional dependency is AUTO (the default:
# used when found), ON (required: configuring fails when it is missing, so a packager never
# ships a build that silently lacks a part) or OFF (not used even when present).
foreach(dep LIBUV LIBEVENT LIBEV LIBDW MHD)
  set(D9_WITH_${dep} AUTO CACHE STRING "Use ${dep}: AUTO (when found), ON (required) or OFF")
  set_property(CACHE D9_WITH_${dep} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${D9_WITH_${dep}}" d9_mode)
  if(d9_mode MATCHES "^(1|Y|YES|TRUE)$")
    set(d9_mode ON)
  elseif(d9_mode MATCHES "^(0|N|NO|FALSE)$")
    set(d9_mode OFF)
  endif()
  if(NOT d9_mode MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "dial9: D9_WITH_${dep}=\"${D9_WITH_${dep}}\": expected AUTO, ON or OFF")
  endif()
  set(D9_WITH_${dep}_MODE ${d9_mode})
endforeach()

# Whether to look for `dep` at all (false when D9_WITH_<dep>=OFF).
macro(d9_dependency_wanted dep out)
  if(D9_WITH_${dep}_MODE STREQUAL "OFF")
    set(${out} FALSE)
  else()
    set(${out} TRUE)
  endif()
endmacro()

# After looking: D9_USE_<dep> is true when it is found and not OFF; a missing dependency that
# is ON stops the configuration, naming what to install. `what` says what is not built.
function(d9_dependency_result dep found install_hint what)
  if(D9_WITH_${dep}_MODE STREQUAL "OFF")
    message(STATUS "dial9: D9_WITH_${dep}=OFF: ${what} not built")
    set(D9_USE_${dep} FALSE PARENT_SCOPE)
  elseif(found)
    set(D9_USE_${dep} TRUE PARENT_SCOPE)
  elseif(D9_WITH_${dep}_MODE STREQUAL "ON")
    message(FATAL_ERROR "dial9: D9_WITH_${dep}=ON but it is not found (${install_hint})")
  else()
    message(STATUS "dial9: ${dep} not found (${install_hint}): ${what} not built")
    set(D9_USE_${dep} FALSE PARENT_SCOPE)
  endif()
endfunction()
