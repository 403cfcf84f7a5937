/* A small, strict JSON reader (RFC 8259) for the test suites: the
 * conformance references are JSON files that C reads without Python.
 *
 * Strict: one value and only whitespace around it, no trailing commas, no
 * comments, no leading zeros, no control characters or invalid UTF-8 in
 * strings, \u escapes decoded to UTF-8 (surrogate pairs joined, lone
 * surrogates refused), duplicate object keys refused. Integers that fit an
 * int64_t are kept exactly; other numbers are doubles. */
#ifndef SPMD_TESTS_JSON_H
#define SPMD_TESTS_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum json_type {
  JSON_NULL,
  JSON_BOOL,
  JSON_NUMBER,
  JSON_STRING,
  JSON_ARRAY,
  JSON_OBJECT
} json_type;

typedef struct json_value json_value;
struct json_value {
  json_type type;
  int boolean;          /* JSON_BOOL: 0 or 1 */
  int is_integer;       /* JSON_NUMBER: written without fraction or
                           exponent and within int64_t */
  int64_t integer;      /* JSON_NUMBER when is_integer */
  double number;        /* JSON_NUMBER: always set */
  char *string;         /* JSON_STRING: UTF-8, NUL-terminated */
  size_t length;        /* JSON_STRING: bytes, without the NUL (a string may
                           hold \u0000) */
  size_t count;         /* JSON_ARRAY / JSON_OBJECT: number of items */
  json_value *items;    /* the items (object values in file order) */
  char **keys;          /* JSON_OBJECT: the keys, NUL-terminated UTF-8 */
};

/* Parses `len` bytes. On failure returns NULL and writes a message with
 * the 1-based line and column into err (errlen bytes, may be 0). */
json_value *json_parse(const char *text, size_t len, char *err, size_t errlen);

/* Reads and parses a whole file; the message names the file on failure. */
json_value *json_parse_file(const char *path, char *err, size_t errlen);

/* Frees a value returned by json_parse*; NULL is accepted. */
void json_free(json_value *value);

/* The value of `key` in an object, or NULL (absent, or not an object). */
const json_value *json_get(const json_value *object, const char *key);

/* Item i of an array (or value i of an object), or NULL when out of range. */
const json_value *json_at(const json_value *value, size_t i);

/* Items of an array or object; 0 for anything else (or NULL). */
size_t json_count(const json_value *value);

/* The string, or NULL when the value is not a string. */
const char *json_string(const json_value *value);

/* The integer, or `fallback` when the value is not an exact integer. */
int64_t json_int(const json_value *value, int64_t fallback);

#endif /* SPMD_TESTS_JSON_H */
