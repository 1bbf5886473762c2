/* Status values: the one way every error leaves the library. */
#include <string.h>

#include <criterion/criterion.h>

#include "weft/weft.h"

Test(status, create_keeps_code_and_message) {
  weft_status* status = weft_status_create(WEFT_NOT_FOUND, "no such node: x");
  cr_assert_not_null(status);
  cr_expect_eq(weft_status_code(status), WEFT_NOT_FOUND);
  cr_expect_str_eq(weft_status_message(status), "no such node: x");
  weft_status_destroy(status);
}

Test(status, message_is_copied) {
  char buffer[] = "original message";
  weft_status* status = weft_status_create(WEFT_INTERNAL, buffer);
  memset(buffer, 'X', sizeof buffer - 1);
  cr_expect_str_eq(weft_status_message(status), "original message");
  weft_status_destroy(status);
}

Test(status, long_and_empty_messages) {
  static char long_message[20001];
  for (size_t i = 0; i < sizeof long_message - 1; ++i)
    long_message[i] = (char)('a' + i % 26);
  weft_status* status = weft_status_create(WEFT_DATA_LOSS, long_message);
  cr_expect_str_eq(weft_status_message(status), long_message);
  weft_status_destroy(status);

  status = weft_status_create(WEFT_ABORTED, "");
  cr_assert_not_null(status, "an error with an empty message is still an error");
  cr_expect_eq(weft_status_code(status), WEFT_ABORTED);
  cr_expect_str_eq(weft_status_message(status), "");
  weft_status_destroy(status);
}

Test(status, ok_is_null) {
  cr_expect_null(weft_status_create(WEFT_OK, "ignored"));
}

Test(status, null_is_ok_everywhere) {
  cr_expect_eq(weft_status_code(NULL), WEFT_OK);
  cr_assert_not_null(weft_status_message(NULL));
  cr_expect_str_eq(weft_status_message(NULL), "");
  weft_status_destroy(NULL);
}

Test(status, every_code_round_trips) {
  for (int code = WEFT_CANCELLED; code <= WEFT_UNAUTHENTICATED; ++code) {
    weft_status* status = weft_status_create((weft_code)code, "m");
    cr_assert_not_null(status);
    cr_expect_eq(weft_status_code(status), code);
    weft_status_destroy(status);
  }
}

/* absl's spellings, so logs read the same as in other code bases. */
Test(status, code_names) {
  static const char* const names[] = {
      "OK",        "CANCELLED",          "UNKNOWN",
      "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS",   "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION", "ABORTED",        "OUT_OF_RANGE",
      "UNIMPLEMENTED",    "INTERNAL",          "UNAVAILABLE",
      "DATA_LOSS",        "UNAUTHENTICATED"};
  for (int code = 0; code <= WEFT_UNAUTHENTICATED; ++code) {
    const char* name = weft_code_name((weft_code)code);
    cr_assert_not_null(name, "code %d", code);
    cr_expect_str_eq(name, names[code]);
  }
  /* An unknown code still gets a printable name rather than NULL. */
  cr_expect_not_null(weft_code_name((weft_code)1234));
}

Test(status, statuses_are_independent) {
  weft_status* a = weft_status_create(WEFT_CANCELLED, "first");
  weft_status* b = weft_status_create(WEFT_CANCELLED, "second");
  cr_assert_neq(a, b);
  weft_status_destroy(a);
  cr_expect_str_eq(weft_status_message(b), "second");
  weft_status_destroy(b);
}
