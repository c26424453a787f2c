# One CMake function for tables of bad-input tests of one subcommand, shared by the test folders
# (tests/link, tests/torch); each case runs expect_error.sh beside this file.
include_guard(GLOBAL)

# syncplan_bad_input_tests(PREFIX name-prefix DATA folder OUTPUT file LABELS label...
#                          SUBCOMMAND word... CASES "DEFECT|INPUT|text|..."...)
# Registers PREFIX<DEFECT> per case: `syncplan SUBCOMMAND DATA/INPUT -o OUTPUT`, run in
# work/bad_<DEFECT> of the calling folder's build folder, must exit 2 with one line on stderr
# holding INPUT and every text, and leave no OUTPUT (SPEC section 2).
function(syncplan_bad_input_tests)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "PREFIX;DATA;OUTPUT" "LABELS;SUBCOMMAND;CASES")
  foreach(case IN LISTS ARG_CASES)
    string(REPLACE "|" ";" texts "${case}")
    list(POP_FRONT texts defect input)
    set(command bash ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/expect_error.sh
                --workdir ${CMAKE_CURRENT_BINARY_DIR}/work/bad_${defect} --absent ${ARG_OUTPUT} --expect ${input})
    foreach(text IN LISTS texts)
      list(APPEND command --expect ${text})
    endforeach()
    add_test(NAME ${ARG_PREFIX}${defect}
             COMMAND ${command} -- $<TARGET_FILE:syncplan> ${ARG_SUBCOMMAND} ${ARG_DATA}/${input} -o ${ARG_OUTPUT})
    set_tests_properties(${ARG_PREFIX}${defect} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT 60)
  endforeach()
endfunction()
