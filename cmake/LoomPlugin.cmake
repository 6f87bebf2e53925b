# loom_add_plugin(<id> SOURCES <files...> [LIBS <libs...>])
#
# Builds plugins/<id> as a MODULE library that links only the SDK headers
# (never the core), with -Wl,--no-undefined so reaching into core symbols
# fails the build. The binary and its manifest.json land together in
# <build>/plugins/<id>/ (LV2-style bundle) and install under
# <libdir>/loom/plugins/<id>/. A static twin `loom_static_<id>` (compiled
# with LOOM_PLUGIN_STATIC) is built for the test suites.
function(loom_add_plugin id)
  cmake_parse_arguments(P "" "" "SOURCES;LIBS" ${ARGN})
  string(REPLACE "-" "_" cid ${id})
  set(tgt loom_plugin_${cid})
  add_library(${tgt} MODULE ${P_SOURCES})
  target_link_libraries(${tgt} PRIVATE loom_sdk ${P_LIBS})
  set_target_properties(${tgt} PROPERTIES
    PREFIX "" OUTPUT_NAME "loom-${id}"
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${LOOM_BUILD_PLUGIN_DIR}/${id})
  if(NOT LOOM_SANITIZE)
    target_link_options(${tgt} PRIVATE -Wl,--no-undefined)
  endif()
  configure_file(${CMAKE_CURRENT_SOURCE_DIR}/manifest.json
                 ${LOOM_BUILD_PLUGIN_DIR}/${id}/manifest.json COPYONLY)
  install(TARGETS ${tgt} LIBRARY DESTINATION ${LOOM_INSTALL_PLUGIN_DIR}/${id})
  install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/manifest.json
          DESTINATION ${LOOM_INSTALL_PLUGIN_DIR}/${id})

  add_library(loom_static_${cid} STATIC ${P_SOURCES})
  target_link_libraries(loom_static_${cid} PUBLIC loom_sdk ${P_LIBS})
  target_compile_definitions(loom_static_${cid} PRIVATE LOOM_PLUGIN_STATIC)
  set_property(GLOBAL APPEND PROPERTY LOOM_STATIC_PLUGINS loom_static_${cid})
  add_dependencies(${tgt} loom_static_${cid})
endfunction()
