#include "json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

typedef struct parser {
  const char *text;
  size_t len;
  size_t pos;
  char *err;
  size_t errlen;
  int failed;
} parser;

static void fail_at(parser *p, const char *fmt, ...) {
  if (p->failed) return;
  p->failed = 1;
  size_t line = 1, column = 1;
  for (size_t i = 0; i < p->pos && i < p->len; ++i) {
    if (p->text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  if (p->errlen == 0) return;
  char message[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  snprintf(p->err, p->errlen, "line %zu, column %zu: %s", line, column, message);
}

static void skip_space(parser *p) {
  while (p->pos < p->len) {
    const char c = p->text[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    ++p->pos;
  }
}

static int peek(const parser *p) {
  return p->pos < p->len ? (unsigned char)p->text[p->pos] : -1;
}

static void free_contents(json_value *v) {
  if (v == NULL) return;
  if (v->type == JSON_STRING) free(v->string);
  if (v->type == JSON_ARRAY || v->type == JSON_OBJECT) {
    for (size_t i = 0; i < v->count; ++i) {
      free_contents(&v->items[i]);
      if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
  }
}

/* A growable byte buffer for strings. */
typedef struct buffer {
  char *data;
  size_t size, cap;
} buffer;

static int buffer_put(buffer *b, const char *bytes, size_t n) {
  if (b->size + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 32;
    while (cap < b->size + n + 1) cap *= 2;
    char *grown = realloc(b->data, cap);
    if (grown == NULL) return 0;
    b->data = grown;
    b->cap = cap;
  }
  memcpy(b->data + b->size, bytes, n);
  b->size += n;
  b->data[b->size] = '\0';
  return 1;
}

static int hex4(parser *p, unsigned *out) {
  if (p->len - p->pos < 4) {
    fail_at(p, "\\u needs four hex digits");
    return 0;
  }
  unsigned v = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = p->text[p->pos + i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else {
      p->pos += (size_t)i;
      fail_at(p, "'%c' is not a hex digit in a \\u escape", c);
      return 0;
    }
  }
  p->pos += 4;
  *out = v;
  return 1;
}

static size_t utf8_encode(unsigned cp, char out[4]) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Length of a valid UTF-8 sequence starting at s (n bytes left), or 0. */
static size_t utf8_valid(const unsigned char *s, size_t n) {
  if (s[0] < 0x80) return 1;
  size_t len;
  unsigned cp;
  if (s[0] >= 0xC2 && s[0] <= 0xDF) {
    len = 2;
    cp = s[0] & 0x1F;
  } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
    len = 3;
    cp = s[0] & 0x0F;
  } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
    len = 4;
    cp = s[0] & 0x07;
  } else {
    return 0;
  }
  if (n < len) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  return len;
}

static int parse_string_raw(parser *p, char **out, size_t *out_len) {
  ++p->pos; /* opening quote */
  buffer b = {NULL, 0, 0};
  if (!buffer_put(&b, "", 0)) {
    fail_at(p, "out of memory");
    return 0;
  }
  for (;;) {
    if (p->pos >= p->len) {
      fail_at(p, "unterminated string");
      break;
    }
    const unsigned char c = (unsigned char)p->text[p->pos];
    if (c == '"') {
      ++p->pos;
      *out = b.data;
      *out_len = b.size;
      return 1;
    }
    if (c < 0x20) {
      fail_at(p, "control character 0x%02x in a string (escape it)", c);
      break;
    }
    if (c == '\\') {
      ++p->pos;
      if (p->pos >= p->len) {
        fail_at(p, "unterminated escape");
        break;
      }
      const char e = p->text[p->pos++];
      char bytes[4];
      size_t n = 1;
      switch (e) {
        case '"': bytes[0] = '"'; break;
        case '\\': bytes[0] = '\\'; break;
        case '/': bytes[0] = '/'; break;
        case 'b': bytes[0] = '\b'; break;
        case 'f': bytes[0] = '\f'; break;
        case 'n': bytes[0] = '\n'; break;
        case 'r': bytes[0] = '\r'; break;
        case 't': bytes[0] = '\t'; break;
        case 'u': {
          unsigned cp;
          if (!hex4(p, &cp)) goto failed;
          if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail_at(p, "lone low surrogate \\u%04x", cp);
            goto failed;
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned low;
            if (p->len - p->pos < 2 || p->text[p->pos] != '\\' || p->text[p->pos + 1] != 'u') {
              fail_at(p, "high surrogate \\u%04x not followed by a low one", cp);
              goto failed;
            }
            p->pos += 2;
            if (!hex4(p, &low)) goto failed;
            if (low < 0xDC00 || low > 0xDFFF) {
              fail_at(p, "high surrogate \\u%04x followed by \\u%04x", cp, low);
              goto failed;
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          n = utf8_encode(cp, bytes);
          break;
        }
        default:
          --p->pos;
          fail_at(p, "unknown escape '\\%c'", e);
          goto failed;
      }
      if (!buffer_put(&b, bytes, n)) {
        fail_at(p, "out of memory");
        break;
      }
      continue;
    }
    const size_t n = utf8_valid((const unsigned char *)p->text + p->pos, p->len - p->pos);
    if (n == 0) {
      fail_at(p, "invalid UTF-8 in a string");
      break;
    }
    if (!buffer_put(&b, p->text + p->pos, n)) {
      fail_at(p, "out of memory");
      break;
    }
    p->pos += n;
  }
failed:
  free(b.data);
  return 0;
}

static int parse_number(parser *p, json_value *v) {
  const size_t start = p->pos;
  int integer = 1;
  if (peek(p) == '-') ++p->pos;
  if (peek(p) == '0') {
    ++p->pos;
    if (peek(p) >= '0' && peek(p) <= '9') {
      fail_at(p, "leading zero in a number");
      return 0;
    }
  } else if (peek(p) >= '1' && peek(p) <= '9') {
    while (peek(p) >= '0' && peek(p) <= '9') ++p->pos;
  } else {
    fail_at(p, "expected a digit");
    return 0;
  }
  if (peek(p) == '.') {
    integer = 0;
    ++p->pos;
    if (!(peek(p) >= '0' && peek(p) <= '9')) {
      fail_at(p, "expected a digit after '.'");
      return 0;
    }
    while (peek(p) >= '0' && peek(p) <= '9') ++p->pos;
  }
  if (peek(p) == 'e' || peek(p) == 'E') {
    integer = 0;
    ++p->pos;
    if (peek(p) == '+' || peek(p) == '-') ++p->pos;
    if (!(peek(p) >= '0' && peek(p) <= '9')) {
      fail_at(p, "expected a digit in the exponent");
      return 0;
    }
    while (peek(p) >= '0' && peek(p) <= '9') ++p->pos;
  }
  char digits[64];
  const size_t n = p->pos - start;
  char *copy = n < sizeof digits ? digits : malloc(n + 1);
  if (copy == NULL) {
    fail_at(p, "out of memory");
    return 0;
  }
  memcpy(copy, p->text + start, n);
  copy[n] = '\0';
  v->type = JSON_NUMBER;
  v->number = strtod(copy, NULL);
  if (integer) {
    errno = 0;
    char *end = NULL;
    const long long ll = strtoll(copy, &end, 10);
    if (errno == 0 && end == copy + n) {
      v->is_integer = 1;
      v->integer = (int64_t)ll;
    }
  }
  if (copy != digits) free(copy);
  return 1;
}

static int parse_value(parser *p, json_value *v, int depth);

static int expect_word(parser *p, const char *word) {
  const size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->text + p->pos, word, n) != 0) {
    fail_at(p, "expected '%s'", word);
    return 0;
  }
  p->pos += n;
  return 1;
}

static int grow(json_value *v, size_t *cap, int with_keys) {
  if (v->count < *cap) return 1;
  const size_t n = *cap ? *cap * 2 : 8;
  json_value *items = realloc(v->items, n * sizeof *items);
  if (items == NULL) return 0;
  v->items = items;
  if (with_keys) {
    char **keys = realloc(v->keys, n * sizeof *keys);
    if (keys == NULL) return 0;
    v->keys = keys;
  }
  *cap = n;
  return 1;
}

static int parse_container(parser *p, json_value *v, int depth, int object) {
  if (depth >= JSON_MAX_DEPTH) {
    fail_at(p, "nesting deeper than %d", JSON_MAX_DEPTH);
    return 0;
  }
  const char close = object ? '}' : ']';
  v->type = object ? JSON_OBJECT : JSON_ARRAY;
  ++p->pos;
  size_t cap = 0;
  skip_space(p);
  if (peek(p) == close) {
    ++p->pos;
    return 1;
  }
  for (;;) {
    skip_space(p);
    if (!grow(v, &cap, object)) {
      fail_at(p, "out of memory");
      return 0;
    }
    json_value *item = &v->items[v->count];
    memset(item, 0, sizeof *item);
    if (object) {
      v->keys[v->count] = NULL;
      if (peek(p) != '"') {
        fail_at(p, "expected a string key");
        return 0;
      }
      const size_t key_pos = p->pos;
      char *key;
      size_t key_len;
      if (!parse_string_raw(p, &key, &key_len)) return 0;
      for (size_t i = 0; i < v->count; ++i) {
        if (strcmp(v->keys[i], key) == 0) {
          p->pos = key_pos;
          fail_at(p, "duplicate key \"%s\"", key);
          free(key);
          return 0;
        }
      }
      v->keys[v->count] = key;
      skip_space(p);
      if (peek(p) != ':') {
        ++v->count; /* so the key is freed */
        fail_at(p, "expected ':'");
        return 0;
      }
      ++p->pos;
      skip_space(p);
    }
    ++v->count;
    if (!parse_value(p, item, depth + 1)) return 0;
    skip_space(p);
    if (peek(p) == ',') {
      ++p->pos;
      skip_space(p);
      if (peek(p) == close) {
        fail_at(p, "trailing comma");
        return 0;
      }
      continue;
    }
    if (peek(p) == close) {
      ++p->pos;
      return 1;
    }
    fail_at(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    return 0;
  }
}

static int parse_value(parser *p, json_value *v, int depth) {
  skip_space(p);
  switch (peek(p)) {
    case '{': return parse_container(p, v, depth, 1);
    case '[': return parse_container(p, v, depth, 0);
    case '"':
      v->type = JSON_STRING;
      return parse_string_raw(p, &v->string, &v->length);
    case 't':
      v->type = JSON_BOOL;
      v->boolean = 1;
      return expect_word(p, "true");
    case 'f':
      v->type = JSON_BOOL;
      return expect_word(p, "false");
    case 'n':
      v->type = JSON_NULL;
      return expect_word(p, "null");
    case -1:
      fail_at(p, "unexpected end of input");
      return 0;
    default:
      if (peek(p) == '-' || (peek(p) >= '0' && peek(p) <= '9')) return parse_number(p, v);
      fail_at(p, "unexpected character '%c'", peek(p));
      return 0;
  }
}

json_value *json_parse(const char *text, size_t len, char *err, size_t errlen) {
  parser p = {text, len, 0, err, errlen, 0};
  if (errlen) err[0] = '\0';
  json_value *v = calloc(1, sizeof *v);
  if (v == NULL) {
    fail_at(&p, "out of memory");
    return NULL;
  }
  if (parse_value(&p, v, 0)) {
    skip_space(&p);
    if (p.pos < p.len) fail_at(&p, "unexpected text after the value");
  }
  if (p.failed) {
    json_free(v);
    return NULL;
  }
  return v;
}

json_value *json_parse_file(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    if (errlen) snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  buffer b = {NULL, 0, 0};
  char chunk[65536];
  size_t n;
  int ok = 1;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    if (!buffer_put(&b, chunk, n)) {
      ok = 0;
      break;
    }
  if (ferror(f)) ok = 0;
  fclose(f);
  if (!ok) {
    if (errlen) snprintf(err, errlen, "%s: read failed", path);
    free(b.data);
    return NULL;
  }
  char message[512];
  json_value *v = json_parse(b.data ? b.data : "", b.size, message, sizeof message);
  free(b.data);
  if (v == NULL && errlen) snprintf(err, errlen, "%s: %s", path, message);
  return v;
}

void json_free(json_value *value) {
  if (value == NULL) return;
  free_contents(value);
  free(value);
}

const json_value *json_get(const json_value *object, const char *key) {
  if (object == NULL || object->type != JSON_OBJECT) return NULL;
  for (size_t i = 0; i < object->count; ++i)
    if (strcmp(object->keys[i], key) == 0) return &object->items[i];
  return NULL;
}

const json_value *json_at(const json_value *value, size_t i) {
  if (value == NULL || (value->type != JSON_ARRAY && value->type != JSON_OBJECT)) return NULL;
  return i < value->count ? &value->items[i] : NULL;
}

size_t json_count(const json_value *value) {
  if (value == NULL || (value->type != JSON_ARRAY && value->type != JSON_OBJECT)) return 0;
  return value->count;
}

const char *json_string(const json_value *value) {
  return value != NULL && value->type == JSON_STRING ? value->string : NULL;
}

int64_t json_int(const json_value *value, int64_t fallback) {
  return value != NULL && value->type == JSON_NUMBER && value->is_integer ? value->integer
                                                                          : fallback;
}
