/* A genuine shared object that exports a function, but not the entry
 * point: the loader must tell it apart from a plugin. */
__attribute__((visibility("default"))) int weft_test_not_an_entry(void);

int weft_test_not_an_entry(void) { return 42; }
