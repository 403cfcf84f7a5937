#include "core/visualize.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "base/error.hpp"

namespace spmd {

namespace {

// Python's divmod for ints: floor division, remainder with the divisor's sign.
std::pair<int64_t, int64_t> py_divmod(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) {
    --q;
    r += b;
  }
  return {q, r};
}

struct Cell {
  std::string label;
  int64_t top = 0, right = 0, bottom = 0, left = 0;
};

struct BoxChars {
  const char *h, *v, *tl, *tm, *tr, *ml, *mm, *mr, *bl, *bm, *br;
};
constexpr BoxChars kSquare{"─", "│", "┌", "┬", "┐", "├", "┼", "┤", "└", "┴", "┘"};
constexpr BoxChars kAscii{"-", "|", "+", "+", "+", "+", "+", "+", "+", "+", "+"};

std::string repeat(const char *s, int64_t n) {
  std::string out;
  for (int64_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string rule(const BoxChars &b, const char *l, const char *m, const char *r,
                 const std::vector<int64_t> &widths) {
  std::string s = l;
  for (size_t j = 0; j < widths.size(); ++j) s += (j ? m : "") + repeat(b.h, widths[j]);
  return s + r + "\n";
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// ---- The table layout of the picture --------------------------------------
//
// JAX draws the picture as a rich Table (square box, a line between rows, no
// padding of its own) whose cells are labels centred inside explicit
// padding. The functions below follow the rules of that layout so the text
// is the same, including tables wider than the console:
//
// - A cell measures (min, max) within an available width M: the label's
//   longest word and its length, each capped at M, plus the cell's left and
//   right padding, capped at M; a cell whose padding leaves less than one
//   column measures (M, M). A column measures the largest of its cells.
// - Columns start at their maximum. When the sum exceeds the console width
//   less the borders, the widest columns shrink to the next widest, the
//   excess shared out by ratio (rounding half to even) until it fits; if
//   that cannot make it fit, every column gives up an equal share. Then each
//   column is measured again within its new width.
// - A cell of width w renders its top padding as blank lines, then the label
//   word-wrapped to the narrower of its length and w less the side padding
//   (a word longer than a line ends in an ellipsis), each line left-aligned to that
//   width and the block centred in w less the padding, then its bottom
//   padding. A cell whose side padding leaves no column shows only its top
//   and bottom padding. Rows are as tall as their tallest cell (at least
//   one line); shorter cells get blank lines below.

struct Measure {
  int64_t min = 0, max = 0;
};

Measure cap(Measure m, int64_t width) { return {std::min(m.min, width), std::min(m.max, width)}; }

Measure normalize(Measure m) {
  const int64_t lo = std::min(std::max<int64_t>(0, m.min), m.max);
  return {std::max<int64_t>(0, lo), std::max<int64_t>(0, std::max(lo, m.max))};
}

// The label's longest word and its whole length.
Measure measure_text(const std::string &text) {
  Measure m{0, static_cast<int64_t>(text.size())};
  int64_t word = 0;
  for (char c : text) {
    word = is_space(c) ? 0 : word + 1;
    m.min = std::max(m.min, word);
  }
  return m;
}

Measure measure_cell(const Cell &c, int64_t width) {
  if (width < 1) return {0, 0};
  const int64_t extra = c.left + c.right;
  Measure m;
  if (width - extra < 1) {
    m = {width, width};
  } else {
    Measure inner = cap(normalize(measure_text(c.label)), width);
    if (inner.max < 1) inner = {0, 0};
    m = cap({inner.min + extra, inner.max + extra}, width);
  }
  m = cap(normalize(m), width);
  return m.max < 1 ? Measure{0, 0} : m;
}

Measure measure_column(const std::vector<std::vector<Cell>> &cells, size_t column,
                       int64_t width) {
  if (width < 1) return {0, 0};
  Measure m{0, 0};
  for (const auto &row : cells) {
    const Measure c = measure_cell(row[column], width);
    m.min = std::max(m.min, c.min);
    m.max = std::max(m.max, c.max);
  }
  return cap(m, width);
}

// Takes `total` away from `values` in proportion to `ratios`, each part
// at most its maximum, rounding half to even.
std::vector<int64_t> ratio_reduce(int64_t total, std::vector<int64_t> ratios,
                                  const std::vector<int64_t> &maximums,
                                  const std::vector<int64_t> &values) {
  int64_t total_ratio = 0;
  for (size_t i = 0; i < ratios.size(); ++i) {
    if (maximums[i] == 0) ratios[i] = 0;
    total_ratio += ratios[i];
  }
  if (total_ratio == 0) return values;
  int64_t remaining = total;
  std::vector<int64_t> out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (ratios[i] != 0 && total_ratio > 0) {
      const double share = static_cast<double>(ratios[i] * remaining) /
                           static_cast<double>(total_ratio);
      const int64_t part = std::min(maximums[i], static_cast<int64_t>(std::nearbyint(share)));
      out.push_back(values[i] - part);
      remaining -= part;
      total_ratio -= ratios[i];
    } else {
      out.push_back(values[i]);
    }
  }
  return out;
}

int64_t sum(const std::vector<int64_t> &v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

// Shrinks the widest columns toward the next widest until the total fits.
std::vector<int64_t> collapse_widths(std::vector<int64_t> widths, int64_t max_width) {
  int64_t total = sum(widths);
  int64_t excess = total - max_width;
  while (total != 0 && excess > 0) {
    const int64_t widest = *std::max_element(widths.begin(), widths.end());
    int64_t second = 0;
    for (int64_t w : widths)
      if (w != widest) second = std::max(second, w);
    const int64_t difference = widest - second;
    std::vector<int64_t> ratios;
    for (int64_t w : widths) ratios.push_back(w == widest ? 1 : 0);
    if (difference == 0) break;
    const std::vector<int64_t> maximums(widths.size(), std::min(excess, difference));
    widths = ratio_reduce(excess, ratios, maximums, widths);
    total = sum(widths);
    excess = total - max_width;
  }
  return widths;
}

std::vector<int64_t> column_widths(const std::vector<std::vector<Cell>> &cells, size_t ncols,
                                   int64_t max_width) {
  std::vector<int64_t> widths(ncols);
  for (size_t j = 0; j < ncols; ++j) {
    const int64_t w = measure_column(cells, j, max_width).max;
    widths[j] = w ? w : 1;
  }
  if (sum(widths) > max_width) {
    widths = collapse_widths(widths, max_width);
    if (sum(widths) > max_width) {
      const int64_t excess = sum(widths) - max_width;
      widths = ratio_reduce(excess, std::vector<int64_t>(ncols, 1), widths, widths);
    }
    for (size_t j = 0; j < ncols; ++j) widths[j] = measure_column(cells, j, widths[j]).max;
  }
  return widths;
}

// Word-wraps text to `width` (>= 1) columns: breaks before a word that does
// not fit (a word longer than a line gets a line of its own), drops the
// spaces that hang past the edge, ends a line still too long with an
// ellipsis ("…", or "." in the ASCII picture), and left-aligns every line to
// exactly `width` columns.
std::vector<std::string> wrap_text(const std::string &text, int64_t width, const char *ellipsis) {
  std::vector<size_t> breaks;
  int64_t offset = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = pos, end = pos;
    while (end < text.size() && is_space(text[end])) ++end;
    if (end == text.size()) break;  // only spaces left: no word
    while (end < text.size() && !is_space(text[end])) ++end;
    const size_t word_end = end;
    while (end < text.size() && is_space(text[end])) ++end;
    pos = end;
    const int64_t length = static_cast<int64_t>(word_end - start);  // without trailing space
    const int64_t full = static_cast<int64_t>(end - start);
    if (width - offset >= length) {
      offset += full;
    } else if (length > width) {
      // A word longer than a line gets a line of its own, cut below.
      if (start) breaks.push_back(start);
      offset = full;
    } else if (offset && start) {
      breaks.push_back(start);
      offset = full;
    }
  }
  std::vector<std::string> lines;
  size_t from = 0;
  breaks.push_back(text.size());
  for (size_t at : breaks) {
    std::string line = text.substr(from, at - from);
    from = at;
    const int64_t len = static_cast<int64_t>(line.size());
    if (len > width) {
      size_t trailing = 0;
      while (trailing < line.size() && is_space(line[line.size() - 1 - trailing])) ++trailing;
      line.resize(line.size() - std::min<size_t>(trailing, static_cast<size_t>(len - width)));
    }
    if (static_cast<int64_t>(line.size()) > width) {
      line.resize(static_cast<size_t>(width - 1));
      line += ellipsis;  // one column wide
    } else {
      line.resize(static_cast<size_t>(width), ' ');
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> render_cell(const Cell &c, int64_t width, const char *ellipsis) {
  std::vector<std::string> lines;
  const std::string blank(static_cast<size_t>(std::max<int64_t>(width, 0)), ' ');
  for (int64_t i = 0; i < c.top; ++i) lines.push_back(blank);
  const int64_t inner = width - c.left - c.right;
  if (inner >= 1) {
    const int64_t text_width = std::min(measure_text(c.label).max, inner);
    if (text_width >= 1) {
      const int64_t excess = inner - text_width;
      const std::string before(static_cast<size_t>(c.left + excess / 2), ' ');
      const std::string after(static_cast<size_t>(excess - excess / 2 + c.right), ' ');
      for (const std::string &line : wrap_text(c.label, text_width, ellipsis))
        lines.push_back(before + line + after);
    }
  }
  for (int64_t i = 0; i < c.bottom; ++i) lines.push_back(blank);
  return lines;
}

}  // namespace

namespace {
// min(max(int(v), lo), hi) for a double that may lie far outside int64:
// bounded first to +-1e18, far beyond any width, so the cast is defined.
int64_t truncate_within(double v, int64_t lo, int64_t hi) {
  const double bounded = std::isnan(v) ? 0.0 : std::min(std::max(v, -1e18), 1e18);
  return std::min(std::max(static_cast<int64_t>(bounded), lo), hi);
}
}  // namespace

std::string visualize_sharding(const Sharding &sharding, const Shape &shape,
                               const PictureOptions &opt) {
  if (shape.size() < 1 || shape.size() > 2)
    invalid("shape ", shape_to_string(shape), ": the picture is drawn for 1 and 2 dimensions only");
  for (int64_t d : shape)
    if (d == 0) invalid("shape ", shape_to_string(shape), ": cannot draw an array with no elements");
  const auto layout = sharding.layout(shape);
  const bool two_d = shape.size() == 2;

  // The same arithmetic as jax.debug.visualize_sharding, in the same order,
  // so the integer truncations agree.
  // Widths are bounded by max_width and heights by the scale, so the
  // doubles are truncated as Python's int() does but never converted while
  // beyond int64 (a shape of (1, 2^62) has an aspect of 2^62).
  const int64_t base_height = static_cast<int64_t>(10 * opt.scale);
  const double aspect = static_cast<double>(two_d ? shape[1] : 1) / static_cast<double>(shape[0]);
  const double base_width = std::trunc(static_cast<double>(base_height) * aspect);
  const double height_to_width = 2.5;

  struct Block {
    std::set<int> devices;
    double width_frac = 0, height_frac = 0;
  };
  std::map<std::pair<int64_t, int64_t>, Block> blocks;
  for (const auto &s : layout) {
    const Shape ext = s.box.extent();
    const auto key = two_d ? std::make_pair(s.block[0], s.block[1])
                           : std::make_pair(int64_t{0}, s.block[0]);
    Block &b = blocks[key];
    b.devices.insert(s.device);
    if (two_d) {
      b.height_frac = static_cast<double>(ext[0]) / static_cast<double>(shape[0]);
      b.width_frac = static_cast<double>(ext[1]) / static_cast<double>(shape[1]);
    } else {
      b.width_frac = static_cast<double>(ext[0]) / static_cast<double>(shape[0]);
    }
  }
  int64_t rows = 0, cols = 0;
  for (const auto &[k, _] : blocks) {
    rows = std::max(rows, k.first + 1);
    cols = std::max(cols, k.second + 1);
  }

  const std::string label = sharding.device_set()->picture_label();
  std::vector<std::vector<Cell>> cells(static_cast<size_t>(rows),
                                       std::vector<Cell>(static_cast<size_t>(cols)));
  for (const auto &[k, b] : blocks) {
    Cell &c = cells[static_cast<size_t>(k.first)][static_cast<size_t>(k.second)];
    c.label = label + " ";
    bool first = true;
    for (int d : b.devices) {
      c.label += (first ? "" : ",") + std::to_string(d);
      first = false;
    }
    const int64_t width = truncate_within(b.width_frac * base_width * height_to_width,
                                          opt.min_width, opt.max_width);
    const int64_t height =
        two_d ? static_cast<int64_t>(b.height_frac * static_cast<double>(base_height)) : 1;
    auto [left, lrem] = py_divmod(width - static_cast<int64_t>(c.label.size()) - 2, 2);
    auto [top, trem] = py_divmod(height - 2, 2);
    c.left = std::max<int64_t>(left, 0);
    c.right = std::max<int64_t>(left + lrem, 0);
    c.top = std::max<int64_t>(top, 0);
    c.bottom = std::max<int64_t>(top + trem, 0);
  }

  const int64_t borders = cols + 1;
  const std::vector<int64_t> widths =
      column_widths(cells, static_cast<size_t>(cols), static_cast<int64_t>(opt.max_width) - borders);

  const BoxChars &b = opt.ascii ? kAscii : kSquare;
  std::string out = rule(b, b.tl, b.tm, b.tr, widths);
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i) out += rule(b, b.ml, b.mm, b.mr, widths);
    std::vector<std::vector<std::string>> rendered;
    size_t height = 1;
    for (size_t j = 0; j < cells[i].size(); ++j) {
      rendered.push_back(render_cell(cells[i][j], widths[j], opt.ascii ? "." : "…"));
      height = std::max(height, rendered.back().size());
    }
    for (size_t line = 0; line < height; ++line) {
      out += b.v;
      for (size_t j = 0; j < rendered.size(); ++j) {
        if (line < rendered[j].size())
          out += rendered[j][line];
        else
          out += std::string(static_cast<size_t>(widths[j]), ' ');
        out += b.v;
      }
      out += "\n";
    }
  }
  out += rule(b, b.bl, b.bm, b.br, widths);
  return out;
}

}  // namespace spmd
