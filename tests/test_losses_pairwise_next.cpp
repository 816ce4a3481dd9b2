// PLACEHOLDER: being written (issue 4).
#include "tests/test_helpers.h"
