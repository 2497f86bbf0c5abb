# SPDX-License-Identifier: MIT
# A 20-second libFuzzer pass per target (run deck parser, checkpoint reader) over the committed
# seed corpus; builds the clang fuzz targets in <build>/fuzz on first use. Label: fuzz.
fsdp_add_e2e_test(fuzz_smoke fuzz.sh)
set_tests_properties(fuzz_smoke PROPERTIES LABELS fuzz SKIP_RETURN_CODE 77 PROCESSORS 2)
