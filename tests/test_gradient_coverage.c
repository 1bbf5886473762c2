/* Every op of the library either has a gradient or is declared not
 * differentiable: a gap would surface only when someone differentiates
 * through it, as an UNIMPLEMENTED error far from here. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

Test(gradient_coverage, every_op_has_a_gradient_status) {
  char gaps[4096] = "";
  int count = 0;
  for (int32_t i = 0; i < weft_op_count(); ++i) {
    weft_op_description d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    WT_OK(weft_op_describe(i, &d));
    if (weft_op_gradient_status(d.name) != -1) continue;
    ++count;
    size_t used = strlen(gaps);
    snprintf(gaps + used, sizeof gaps - used, "%s%s", used ? ", " : "",
             d.name);
  }
  cr_expect_gt(weft_op_count(), 80);
  cr_expect_eq(count, 0,
               "%d ops have neither a gradient nor a not-differentiable "
               "declaration: %s", count, gaps);
}
