# SPDX-License-Identifier: MIT
# A short libFuzzer pass per target (run deck parser, checkpoint reader, weight readers, chat
# templates, tokenizer.json) over the committed seed corpus (tests/e2e/fuzz.sh). fuzz_build compiles the clang fuzz targets in
# <build>/fuzz on both cores; fuzz_smoke, one process, fuzzes them on one. Label: fuzz.
fsdp_add_e2e_test(fuzz_build fuzz.sh)
set_property(TEST fuzz_build APPEND PROPERTY ENVIRONMENT "FUZZ_STAGE=build")
set_tests_properties(fuzz_build PROPERTIES LABELS fuzz SKIP_RETURN_CODE 77 PROCESSORS 2
                     FIXTURES_SETUP fuzz_targets)
fsdp_add_e2e_test(fuzz_smoke fuzz.sh)
set_tests_properties(fuzz_smoke PROPERTIES LABELS fuzz SKIP_RETURN_CODE 77
                     FIXTURES_REQUIRED fuzz_targets)
