# LoomInstall.cmake - installs what plugin authors build against:
#   <libdir>/cmake/Loom/   LoomConfig.cmake (+ version file, exported targets
#                          Loom::sdk, Loom::mock_host, Loom::loom, the kits
#                          Loom::kit_<name> (sdk/kits/CMakeLists.txt installs
#                          them and sets their export names), and the
#                          function loom_add_plugin for out-of-tree plugins)
#   <libdir>/pkgconfig/    loom-sdk.pc (headers only; plugins never link libloom)
# and lets the installed `loom` find libloom beside it ($ORIGIN/../<libdir>).
include(CMakePackageConfigHelpers)

set(LOOM_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Loom)

set_target_properties(loom_sdk PROPERTIES EXPORT_NAME sdk)
install(TARGETS loom_sdk EXPORT LoomTargets)
if(TARGET loom_mock_host)
  set_target_properties(loom_mock_host PROPERTIES EXPORT_NAME mock_host)
endif()
set_target_properties(loom_cli PROPERTIES
  INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

install(EXPORT LoomTargets NAMESPACE Loom::
        FILE LoomTargets.cmake DESTINATION ${LOOM_CMAKE_INSTALL_DIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/LoomConfig.cmake.in
  ${CMAKE_BINARY_DIR}/LoomConfig.cmake
  INSTALL_DESTINATION ${LOOM_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR LOOM_INSTALL_PLUGIN_DIR)
# 0.x releases: a plugin built for 0.4 needs a 0.4.y host.
write_basic_package_version_file(
  ${CMAKE_BINARY_DIR}/LoomConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/LoomConfig.cmake
              ${CMAKE_BINARY_DIR}/LoomConfigVersion.cmake
        DESTINATION ${LOOM_CMAKE_INSTALL_DIR})

# pkg-config file relocatable through ${pcfiledir}.
file(RELATIVE_PATH LOOM_PC_TO_PREFIX
     /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" LOOM_PC_TO_PREFIX "${LOOM_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/loom-sdk.pc.in
               ${CMAKE_BINARY_DIR}/loom-sdk.pc @ONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/loom.pc.in ${CMAKE_BINARY_DIR}/loom.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/loom-sdk.pc ${CMAKE_BINARY_DIR}/loom.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The conventions users expect: the man page, bash completion, the JSON
# Schemas of every input and output format, the licence and the changelog.
install(FILES ${CMAKE_SOURCE_DIR}/docs/man/loom.1
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/tools/completion/loom.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME loom)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/schemas/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/loom/schemas
        FILES_MATCHING PATTERN "*.schema.json")
install(FILES ${CMAKE_SOURCE_DIR}/LICENSE ${CMAKE_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
