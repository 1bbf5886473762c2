/* JSON on stdout, for the tool's --json output: string literals, and a
 * small printer of objects' fields that puts the commas in. */
#ifndef WEFT_TOOLS_JSON_H_
#define WEFT_TOOLS_JSON_H_

#include <stdio.h>

/* `text` (NULL prints "") quoted and escaped.  Control characters are
 * escaped; bytes >= 0x80 pass through, as the UTF-8 they are meant to be. */
static inline void weft_tool_json_string(const char* text) {
  putchar('"');
  for (const unsigned char* c = (const unsigned char*)(text ? text : "");
       *c; ++c) {
    if (*c == '"' || *c == '\\')
      printf("\\%c", *c);
    else if (*c < 0x20)
      printf("\\u%04x", *c);
    else
      putchar(*c);
  }
  putchar('"');
}

/* Where the fields of the object being printed stand.  `json` is for
 * commands that print either text or JSON from one walk. */
typedef struct printer {
  int json;
  int fields; /* fields printed so far in the current JSON object */
} printer;

static inline void json_key(printer* p, const char* key) {
  printf("%s", p->fields++ ? ", " : "");
  weft_tool_json_string(key);
  printf(": ");
}

static inline void json_text(printer* p, const char* key,
                             const char* value) {
  json_key(p, key);
  weft_tool_json_string(value);
}

static inline void json_number(printer* p, const char* key, double value) {
  json_key(p, key);
  printf("%.17g", value);
}

static inline void json_bool(printer* p, const char* key, int value) {
  json_key(p, key);
  printf("%s", value ? "true" : "false");
}

/* Starts element `index` of an array of objects, on a line of its own. */
static inline void json_begin_object(printer* p, int index) {
  printf("%s\n    {", index ? "," : "");
  p->fields = 0;
}

/* An object inside the current one (element `index` of an array, or a
 * field's value after json_key): returns the outer object's field count,
 * for json_end_nested to restore. */
static inline int json_begin_nested(printer* p, int index) {
  int outer = p->fields;
  printf("%s{", index ? ", " : "");
  p->fields = 0;
  return outer;
}

static inline void json_end_nested(printer* p, int outer) {
  printf("}");
  p->fields = outer;
}

#endif /* WEFT_TOOLS_JSON_H_ */
