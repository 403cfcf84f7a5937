#include "core/format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "base/promotion.hpp"

namespace spmd {

namespace {

// ---- Decimal digits of floats ---------------------------------------------

// A finite value as sign, significant digits d1 d2 ... dn (no trailing zeros
// unless the value is 0) and exponent e: value = d1.d2...dn x 10^e.
struct Decimal {
  bool negative = false;
  std::string digits;
  int exponent = 0;
};

// Parses "-d.ddde+XX" as printf("%e") and std::to_chars write it.
Decimal parse_scientific(const char *s) {
  Decimal d;
  if (*s == '-') {
    d.negative = true;
    ++s;
  }
  for (; *s && *s != 'e'; ++s)
    if (*s >= '0' && *s <= '9') d.digits += *s;
  d.exponent = *s == 'e' ? std::atoi(s + 1) : 0;
  while (d.digits.size() > 1 && d.digits.back() == '0') d.digits.pop_back();
  return d;
}

Decimal correctly_rounded(double v, int significant) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", significant - 1, v);
  return parse_scientific(buf);
}

// The shortest digits that identify the float16 value v, chosen as Dragon4
// (which numpy uses) chooses them: at each length, the digits of v cut
// there and the next ones up are the candidates; the first length where one
// reads back as v wins, the nearer one (the even
// last digit on a tie) when both do.
Decimal shortest_f16(double v) {
  const uint16_t bits = f32_to_f16_bits(static_cast<float>(v));
  const uint16_t mag = bits & 0x7fffu;
  const double a = std::fabs(v);
  if (mag == 0) return parse_scientific(v < 0 || std::signbit(v) ? "-0e+00" : "0e+00");
  const double below = f16_bits_to_f32(static_cast<uint16_t>(mag - 1));
  const double above = mag == 0x7bffu ? 65536.0 : f16_bits_to_f32(static_cast<uint16_t>(mag + 1));
  const double lo = (below + a) / 2, hi = (above + a) / 2;
  // Every digit of |v| (float16 values need at most 17 significant digits).
  const Decimal exact = correctly_rounded(a, 40);
  for (size_t n = 1; n <= exact.digits.size() + 1; ++n) {
    std::string down = exact.digits.substr(0, std::min(n, exact.digits.size()));
    down.resize(n, '0');
    const std::string rest = n < exact.digits.size() ? exact.digits.substr(n) : "";
    const bool remainder = rest.find_first_not_of('0') != std::string::npos;
    // The next n-digit decimal up, carrying into a new leading digit.
    std::string up = down;
    int up_exponent = exact.exponent;
    size_t i = n;
    while (i > 0 && up[i - 1] == '9') up[--i] = '0';
    if (i == 0) {
      up = "1" + std::string(n - 1, '0');
      ++up_exponent;
    } else {
      ++up[i - 1];
    }
    auto value_of = [](const std::string &digits, int exponent) {
      const std::string text = digits.substr(0, 1) + "." + digits.substr(1) + "e" + std::to_string(exponent);
      return std::strtod(text.c_str(), nullptr);
    };
    const double dv = value_of(down, exact.exponent), uv = value_of(up, up_exponent);
    // A decimal on the interval's edge reads back as v when v's last bit is
    // even (round half to even).
    const bool even = (mag & 1u) == 0;
    auto inside = [&](double d) { return (d > lo && d < hi) || (even && (d == lo || d == hi)); };
    const bool down_ok = !remainder || inside(dv);
    const bool up_ok = remainder && inside(uv);
    if (!down_ok && !up_ok) continue;
    bool take_up = up_ok && !down_ok;
    if (down_ok && up_ok) {
      const char first = rest[0];
      const bool beyond_half = first > '5' || (first == '5' && rest.find_first_not_of('0', 1) != std::string::npos);
      const bool half = first == '5' && !beyond_half;
      take_up = beyond_half || (half && (down[n - 1] - '0') % 2 == 1);
    }
    Decimal d;
    d.negative = v < 0;
    d.digits = take_up ? up : down;
    d.exponent = take_up ? up_exponent : exact.exponent;
    while (d.digits.size() > 1 && d.digits.back() == '0') d.digits.pop_back();
    return d;
  }
  return correctly_rounded(v, 17);
}

// The shortest digits that read back as the same value of the dtype.
Decimal shortest(spmd_dtype dtype, double v) {
  char buf[64];
  if (dtype == SPMD_F64) {
    auto r = std::to_chars(buf, buf + sizeof buf - 1, v, std::chars_format::scientific);
    *r.ptr = '\0';
    return parse_scientific(buf);
  }
  if (dtype == SPMD_F32) {
    auto r = std::to_chars(buf, buf + sizeof buf - 1, static_cast<float>(v),
                           std::chars_format::scientific);
    *r.ptr = '\0';
    return parse_scientific(buf);
  }
  return shortest_f16(v);
}

int fraction_digits(const Decimal &d) {
  return std::max(0, static_cast<int>(d.digits.size()) - 1 - d.exponent);
}

// Positional digits: the shortest that read back, cut to `precision`
// fractional digits (rounding the exact value, half to even) when longer;
// trailing zeros of the fraction dropped. Returns integer and fraction parts
// (the integer part carries the sign).
std::pair<std::string, std::string> positional(spmd_dtype dtype, double v, int precision) {
  Decimal d = shortest(dtype, v);
  if (fraction_digits(d) > precision) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
    std::string s = buf;
    const size_t dot = s.find('.');
    std::string frac = dot == std::string::npos ? "" : s.substr(dot + 1);
    while (!frac.empty() && frac.back() == '0') frac.pop_back();
    return {s.substr(0, dot), frac};
  }
  std::string int_part, frac;
  const int n = static_cast<int>(d.digits.size());
  if (d.exponent >= 0) {
    for (int i = 0; i <= d.exponent; ++i) int_part += i < n ? d.digits[static_cast<size_t>(i)] : '0';
    if (d.exponent + 1 < n) frac = d.digits.substr(static_cast<size_t>(d.exponent + 1));
  } else {
    int_part = "0";
    frac = std::string(static_cast<size_t>(-d.exponent - 1), '0') + d.digits;
  }
  if (d.digits == "0") frac.clear();
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return {(d.negative ? "-" : "") + int_part, frac};
}

// Scientific digits: mantissa digits after the point (shortest, cut to
// `precision` when longer) and the exponent.
struct Scientific {
  std::string int_part;  // sign and first digit
  std::string frac;
  int exponent = 0;
};

Scientific scientific(spmd_dtype dtype, double v, int precision) {
  Decimal d = shortest(dtype, v);
  if (static_cast<int>(d.digits.size()) - 1 > precision) d = correctly_rounded(v, precision + 1);
  Scientific s;
  s.int_part = (d.negative ? "-" : "") + d.digits.substr(0, 1);
  s.frac = d.digits.substr(1);
  while (!s.frac.empty() && s.frac.back() == '0') s.frac.pop_back();
  s.exponent = d.digits == "0" ? 0 : d.exponent;
  return s;
}

std::string exponent_text(int exponent, int digits) {
  std::string e = std::to_string(std::abs(exponent));
  if (static_cast<int>(e.size()) < digits) e.insert(0, static_cast<size_t>(digits) - e.size(), '0');
  return std::string(exponent < 0 ? "-" : "+") + e;
}

std::string pad_left(const std::string &s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string pad_right(const std::string &s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// ---- Elements ---------------------------------------------------------------

bool is_int(spmd_dtype t) { return dtype_is_integer(t); }

int64_t load_int(spmd_dtype t, const void *p) {
  switch (t) {
    case SPMD_I8: { int8_t v; std::memcpy(&v, p, 1); return v; }
    case SPMD_I16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case SPMD_I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case SPMD_I64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    case SPMD_U16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case SPMD_U32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: { uint8_t v; std::memcpy(&v, p, 1); return v; }
  }
}

// Rounds a float result to the dtype, as numpy computes in the dtype.
double in_dtype(spmd_dtype t, double v) {
  if (t == SPMD_F32) return static_cast<float>(v);
  if (t == SPMD_F16) return f16_bits_to_f32(f32_to_f16_bits(static_cast<float>(v)));
  return v;
}

// bfloat16 is not a numpy float type: numpy prints each element as its
// scalar does, which is C's "%g" of the value (6 significant digits).
std::string bf16_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

using Formatter = std::function<std::string(const unsigned char *)>;

// numpy's formatter for the elements shown, all given the same width.
Formatter make_formatter(spmd_dtype dtype, const std::vector<const unsigned char *> &shown,
                         bool zero_dim, const PrintOptions &opt) {
  if (dtype == SPMD_BOOL) {
    const std::string yes = zero_dim ? "True" : " True";
    return [yes](const unsigned char *p) { return *p ? yes : std::string("False"); };
  }
  if (dtype == SPMD_BF16) {
    return [](const unsigned char *p) { return bf16_text(load_as_double(SPMD_BF16, p)); };
  }
  if (is_int(dtype)) {
    size_t width = 0;
    if (!shown.empty()) {
      int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
      for (auto *p : shown) {
        lo = std::min(lo, load_int(dtype, p));
        hi = std::max(hi, load_int(dtype, p));
      }
      width = std::max(std::to_string(lo).size(), std::to_string(hi).size());
    }
    return [dtype, width](const unsigned char *p) {
      return pad_left(std::to_string(load_int(dtype, p)), width);
    };
  }

  // Floats: positional unless the magnitudes call for scientific notation.
  std::vector<double> finite;
  bool any_nonfinite = false, negative_inf = false;
  for (auto *p : shown) {
    const double v = load_as_double(dtype, p);
    if (std::isfinite(v)) {
      finite.push_back(v);
    } else {
      any_nonfinite = true;
      if (std::isinf(v) && v < 0) negative_inf = true;
    }
  }
  const int type_digits = dtype == SPMD_F16 ? 3 : dtype == SPMD_F32 ? 6 : 15;
  const double exp_cutoff = std::pow(10.0, std::min(8, type_digits));
  bool exp_format = false;
  double max_abs = 0, min_abs = std::numeric_limits<double>::infinity();
  for (double v : finite)
    if (v != 0) {
      max_abs = std::max(max_abs, std::fabs(v));
      min_abs = std::min(min_abs, std::fabs(v));
    }
  if (max_abs > 0) {
    // numpy compares in the dtype: 0.0001 and the ratio are rounded to it.
    const double ratio = dtype == SPMD_F64
                             ? max_abs / min_abs
                             : in_dtype(dtype, static_cast<float>(max_abs) / static_cast<float>(min_abs));
    exp_format = max_abs >= exp_cutoff || min_abs < in_dtype(dtype, 0.0001) || ratio > 1000.0;
  }

  struct Layout {
    bool exp = false;
    size_t left = 0, right = 0;
    int precision = 0, exp_digits = 0;
  } L;
  L.exp = exp_format;
  if (finite.empty()) {
    L.left = L.right = 0;
  } else if (exp_format) {
    int exp_len = 0;
    for (double v : finite) {
      const Scientific s = scientific(dtype, v, opt.precision);
      L.left = std::max(L.left, s.int_part.size());
      L.precision = std::max(L.precision, static_cast<int>(s.frac.size()));
      exp_len = std::max(exp_len, static_cast<int>(exponent_text(s.exponent, 2).size()));
    }
    L.exp_digits = exp_len - 1;
    L.right = static_cast<size_t>(L.exp_digits + 2 + L.precision);
  } else {
    for (double v : finite) {
      const auto [ip, fp] = positional(dtype, v, opt.precision);
      L.left = std::max(L.left, ip.size());
      L.right = std::max(L.right, fp.size());
    }
  }
  if (any_nonfinite) {
    const int64_t offset = static_cast<int64_t>(L.right) + 1;
    const int64_t need = std::max<int64_t>(3 - offset, 3 + (negative_inf ? 1 : 0) - offset);
    L.left = static_cast<size_t>(std::max<int64_t>(static_cast<int64_t>(L.left), need));
  }
  return [dtype, L, opt](const unsigned char *p) {
    const double v = load_as_double(dtype, p);
    if (!std::isfinite(v)) {
      const std::string text = std::isnan(v) ? "nan" : v < 0 ? "-inf" : "inf";
      return pad_left(text, L.left + L.right + 1);
    }
    if (L.exp) {
      // Every element gets exactly `precision` digits after the point: its
      // shortest digits when they are that long, else the exact value
      // rounded there (digits past the shortest ones included).
      Decimal d = shortest(dtype, v);
      if (static_cast<int>(d.digits.size()) - 1 != L.precision || d.digits == "0")
        d = correctly_rounded(v, L.precision + 1);
      std::string digits = d.digits;
      digits.resize(static_cast<size_t>(L.precision) + 1, '0');
      return pad_left((d.negative ? "-" : "") + digits.substr(0, 1), L.left) + "." +
             digits.substr(1) + "e" + exponent_text(d.digits == "0" ? 0 : d.exponent, L.exp_digits);
    }
    const auto [ip, fp] = positional(dtype, v, opt.precision);
    return pad_left(ip, L.left) + "." + pad_right(fp, L.right);
  };
}

// ---- Layout of nested brackets -------------------------------------------------

struct Printer {
  const Shape &shape;
  std::vector<int64_t> strides;  // bytes
  const unsigned char *data;
  Formatter format;
  std::string separator;
  int64_t edgeitems;
  bool summarise;

  // Appends `word`, first breaking the line when it would pass `width`
  // (never on a line holding only the indent).
  void extend(std::string &s, std::string &line, const std::string &word, int64_t width,
              const std::string &indent) const {
    const bool wrap = static_cast<int64_t>(line.size() + word.size()) > width &&
                      line.size() > indent.size();
    if (wrap) {
      size_t end = line.size();
      while (end > 0 && line[end - 1] == ' ') --end;
      s += line.substr(0, end) + "\n";
      line = indent;
    }
    line += word;
  }

  std::string recurse(size_t axis, int64_t offset, const std::string &indent,
                      int64_t width) const {
    if (axis == shape.size()) return format(data + offset);
    const std::string next_indent = indent + " ";
    const int64_t next_width = width - 1;
    const int64_t n = shape[axis];
    const bool gap = summarise && 2 * edgeitems < n;
    const int64_t leading = gap ? edgeitems : 0;
    const int64_t trailing = gap ? edgeitems : n;
    auto at = [&](int64_t i) { return offset + i * strides[axis]; };
    std::string s;
    if (axis + 1 == shape.size()) {
      std::string sep_trimmed = separator;
      while (!sep_trimmed.empty() && sep_trimmed.back() == ' ') sep_trimmed.pop_back();
      const int64_t elem_width =
          width - static_cast<int64_t>(std::max<size_t>(sep_trimmed.size(), 1));
      std::string line = indent;
      for (int64_t i = 0; i < leading; ++i) {
        extend(s, line, recurse(axis + 1, at(i), next_indent, next_width), elem_width, indent);
        line += separator;
      }
      if (gap) {
        extend(s, line, "...", elem_width, indent);
        line += separator;
      }
      for (int64_t i = trailing; i > 1; --i) {
        extend(s, line, recurse(axis + 1, at(n - i), next_indent, next_width), elem_width, indent);
        line += separator;
      }
      extend(s, line, recurse(axis + 1, at(n - 1), next_indent, next_width), elem_width, indent);
      s += line;
    } else {
      std::string line_sep = separator;
      while (!line_sep.empty() && line_sep.back() == ' ') line_sep.pop_back();
      line_sep += std::string(shape.size() - axis - 1, '\n');
      for (int64_t i = 0; i < leading; ++i)
        s += indent + recurse(axis + 1, at(i), next_indent, next_width) + line_sep;
      if (gap) s += indent + "..." + line_sep;
      for (int64_t i = trailing; i > 1; --i)
        s += indent + recurse(axis + 1, at(n - i), next_indent, next_width) + line_sep;
      s += indent + recurse(axis + 1, at(n - 1), next_indent, next_width);
    }
    return "[" + s.substr(indent.size()) + "]";
  }
};

// The elements numpy looks at to choose the format: all of them, or only
// the leading and trailing edge items of each axis when summarising.
void collect_shown(const Shape &shape, const std::vector<int64_t> &strides,
                   const unsigned char *data, bool summarise, int64_t edge, size_t axis,
                   int64_t offset, std::vector<const unsigned char *> &out) {
  if (axis == shape.size()) {
    out.push_back(data + offset);
    return;
  }
  const int64_t n = shape[axis];
  for (int64_t i = 0; i < n; ++i) {
    if (summarise && n > 2 * edge && i >= edge && i < n - edge) {
      i = n - edge - 1;
      continue;
    }
    collect_shown(shape, strides, data, summarise, edge, axis + 1, offset + i * strides[axis], out);
  }
}

std::string python_float_str(spmd_dtype dtype, double v) {
  // A numpy float scalar's str: positional with the shortest digits and at
  // least one fractional digit for 1e-4 <= |v| < 10^p (and 0), where p is
  // 3 for float16, 6 for float32 and 16 for float64; otherwise scientific
  // with the shortest digits and a two-digit exponent or more.
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  const double a = std::fabs(v);
  const double upper = dtype == SPMD_F16 ? 1e3 : dtype == SPMD_F32 ? 1e6 : 1e16;
  if (a == 0 || (a < upper && a >= 1e-4)) {
    auto [ip, fp] = positional(dtype, v, 1000);
    return ip + "." + (fp.empty() ? "0" : fp);
  }
  const Decimal d = shortest(dtype, v);
  std::string s = (d.negative ? "-" : "") + d.digits.substr(0, 1);
  if (d.digits.size() > 1) s += "." + d.digits.substr(1);
  return s + "e" + exponent_text(d.exponent, 2);
}

}  // namespace

std::string scalar_str(spmd_dtype dtype, const void *element) {
  const auto *p = static_cast<const unsigned char *>(element);
  if (dtype == SPMD_BOOL) return *p ? "True" : "False";
  if (is_int(dtype)) return std::to_string(load_int(dtype, p));
  if (dtype == SPMD_BF16) return bf16_text(load_as_double(dtype, p));
  return python_float_str(dtype, load_as_double(dtype, p));
}

std::string array2string(spmd_dtype dtype, const Shape &shape, const void *data,
                         const std::string &separator, const std::string &prefix,
                         const std::string &suffix, const PrintOptions &opt) {
  check_dtype("dtype", dtype);
  const int64_t size = shape_elements(shape);
  if (size == 0) return "[]";
  const auto *bytes = static_cast<const unsigned char *>(data);
  std::vector<int64_t> strides(shape.size());
  int64_t stride = static_cast<int64_t>(dtype_size(dtype));
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  const bool summarise = size > opt.threshold;
  std::vector<const unsigned char *> shown;
  collect_shown(shape, strides, bytes, summarise, opt.edgeitems, 0, 0, shown);
  Printer printer{shape, strides, bytes,
                  make_formatter(dtype, shown, shape.empty(), opt),
                  separator, opt.edgeitems, summarise};
  const std::string indent = " " + std::string(prefix.size(), ' ');
  return printer.recurse(0, 0, indent, opt.linewidth - static_cast<int64_t>(suffix.size()));
}

std::string array_repr(spmd_dtype type, const Shape &shape, const void *data) {
  const std::string prefix = "Array(";
  const std::string dtype = cat("dtype=", dtype_name(type));
  const PrintOptions opt;
  std::string s;
  if (shape_elements(shape) == 0)
    s = "[], shape=" + shape_to_string(shape);
  else
    s = array2string(type, shape, data, ", ", prefix, ",", opt);
  // As JAX: the dtype goes on the last line when it fits, else it is set
  // apart by the prefix's width of spaces.
  const size_t newline = s.rfind('\n');
  const int64_t last_line = static_cast<int64_t>(s.size()) -
                            (newline == std::string::npos ? -1 : static_cast<int64_t>(newline)) + 1;
  const std::string sep = last_line + static_cast<int64_t>(dtype.size()) + 2 > opt.linewidth
                              ? std::string(prefix.size(), ' ')
                              : " ";
  return prefix + s + "," + sep + dtype + ")";
}

std::string array_str(spmd_dtype dtype, const Shape &shape, const void *data) {
  if (shape.empty()) return scalar_str(dtype, data);
  return array2string(dtype, shape, data, " ", "", "");
}

}  // namespace spmd
