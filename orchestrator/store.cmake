add_library(ws_store STATIC ${CMAKE_CURRENT_LIST_DIR}/store.cc)
target_include_directories(ws_store PUBLIC ${CMAKE_SOURCE_DIR})
target_link_libraries(ws_store PUBLIC ws_base PRIVATE SQLite::SQLite3 nlohmann_json::nlohmann_json)
ws_add_test(store_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_test.cc LIBS ws_store)
