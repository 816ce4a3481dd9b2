#include "tests/test_helpers.h"
