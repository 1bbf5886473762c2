/* A JSON string literal on stdout, for the tool's --json output. */
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

#endif /* WEFT_TOOLS_JSON_H_ */
