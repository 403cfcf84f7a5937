#include "core/partition_spec.hpp"

#include <algorithm>

#include <cctype>
#include <unordered_map>

#include "base/error.hpp"
#include "core/mesh.hpp"
#include "spmd/sharding.h"

namespace spmd {

PartitionSpec::PartitionSpec(std::vector<Dim> dims) {
  for (auto &d : dims) append(std::move(d));
}

void PartitionSpec::check_dim(const Dim &dim, size_t index) const {
  if (index >= SPMD_MAX_NDIM)
    invalid("spec '", short_string(), "': a spec has at most ", SPMD_MAX_NDIM,
            " dimensions (SPMD_MAX_NDIM), as arrays do");
  for (const auto &axis : dim)
    if (!valid_axis_name(axis))
      invalid("spec dimension ", index, ": '", axis, "' is not a valid axis name");
  // Only the new dimension's axes can repeat one (at most 8 dimensions,
  // so this stays small).
  for (size_t i = 0; i < dim.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (dim[j] == dim[i])
        invalid("spec '", short_string(), "': axis '", dim[i], "' is used twice in dimension ",
                index);
    for (size_t d = 0; d < dims_.size(); ++d)
      for (const auto &axis : dims_[d])
        if (axis == dim[i])
          invalid("spec '", PartitionSpec(dims_, Unchecked{}).short_string(), "': axis '",
                  dim[i], "' is used twice (dimensions ", d, " and ", index, ")");
  }
}

void PartitionSpec::append(Dim dim) {
  check_dim(dim, dims_.size());
  dims_.push_back(std::move(dim));
}

std::vector<PartitionSpec::Dim> PartitionSpec::normalized() const {
  std::vector<Dim> d = dims_;
  while (!d.empty() && d.back().empty()) d.pop_back();
  return d;
}

bool PartitionSpec::same_layout(const PartitionSpec &o) const {
  const size_t n = std::max(dims_.size(), o.dims_.size());
  static const Dim none;
  for (size_t d = 0; d < n; ++d)
    if ((d < dims_.size() ? dims_[d] : none) != (d < o.dims_.size() ? o.dims_[d] : none)) return false;
  return true;
}

std::string PartitionSpec::to_string() const {
  // Python's repr of the tuple of entries, after "PartitionSpec".
  std::string s = "PartitionSpec(";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    const Dim &d = dims_[i];
    if (d.empty()) {
      s += "None";
    } else if (d.size() == 1) {
      s += "'" + d[0] + "'";
    } else {
      s += "(";
      for (size_t j = 0; j < d.size(); ++j) s += (j ? ", '" : "'") + d[j] + "'";
      s += ")";
    }
  }
  if (dims_.size() == 1) s += ",";
  return s + ")";
}

std::string PartitionSpec::short_string() const {
  std::string s;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    const Dim &d = dims_[i];
    if (d.empty()) s += "None";
    else if (d.size() == 1) s += d[0];
    else {
      s += "(";
      for (size_t j = 0; j < d.size(); ++j) s += (j ? "," : "") + d[j];
      s += ")";
    }
  }
  return s;
}

namespace {

// A small recursive-descent parser over the spec text. Columns in messages
// are 1-based, as editors count.
class SpecParser {
 public:
  explicit SpecParser(const std::string &text) : t_(text) {}

  std::vector<PartitionSpec::Dim> parse() {
    skip_space();
    bool wrapped = false;
    for (const char *head : {"PartitionSpec", "P"}) {
      const size_t n = std::char_traits<char>::length(head);
      if (t_.compare(pos_, n, head) == 0) {
        size_t after = pos_ + n;
        while (after < t_.size() && std::isspace(static_cast<unsigned char>(t_[after]))) ++after;
        if (after < t_.size() && t_[after] == '(') {
          pos_ = after + 1;
          wrapped = true;
          break;
        }
      }
    }
    std::vector<PartitionSpec::Dim> dims;
    skip_space();
    const char close = wrapped ? ')' : '\0';
    while (!at_end_of_list(close)) {
      dims.push_back(entry());
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
        continue;
      }
      if (!at_end_of_list(close))
        error(wrapped ? "expected ',' or ')'" : "expected ',' or the end of the spec");
    }
    if (wrapped) {
      ++pos_;  // ')'
      skip_space();
      if (pos_ < t_.size()) error("unexpected text after ')'");
    }
    return dims;
  }

 private:
  bool at_end_of_list(char close) {
    if (close == '\0') return pos_ >= t_.size();
    if (pos_ >= t_.size()) error("expected ')' before the end of the spec");
    return t_[pos_] == close;
  }

  PartitionSpec::Dim entry() {
    if (peek() == '(') {
      ++pos_;
      PartitionSpec::Dim axes;
      skip_space();
      while (peek() != ')') {
        if (pos_ >= t_.size()) error("expected ')' to close the tuple");
        std::string n = name(/*allow_none=*/false);
        axes.push_back(n);
        skip_space();
        if (peek() == ',') {
          ++pos_;
          skip_space();
        } else if (pos_ >= t_.size()) {
          error("expected ')' to close the tuple");
        } else if (peek() != ')') {
          error("expected ',' or ')' in the tuple");
        }
      }
      ++pos_;
      return axes;
    }
    std::string n = name(/*allow_none=*/true);
    if (n == "None") return {};
    return {n};
  }

  // An axis name, bare or quoted; "None" bare only where allowed.
  std::string name(bool allow_none) {
    const size_t start = pos_;
    if (peek() == '\'' || peek() == '"') {
      const char q = t_[pos_++];
      const size_t end = t_.find(q, pos_);
      if (end == std::string::npos) error("unterminated quoted axis name");
      std::string n = t_.substr(pos_, end - pos_);
      if (!valid_axis_name(n)) {
        pos_ = start;
        error(cat("'", n, "' is not a valid axis name"));
      }
      pos_ = end + 1;
      return n;
    }
    while (pos_ < t_.size() &&
           (std::isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '_'))
      ++pos_;
    std::string n = t_.substr(start, pos_ - start);
    if (n.empty()) {
      pos_ = start;
      error(allow_none ? "expected an axis name, None or '('" : "expected an axis name");
    }
    if (n == "None" && allow_none) return n;
    if (!valid_axis_name(n)) {
      pos_ = start;
      error(n == "None" ? "None cannot appear inside a tuple of axes"
                        : cat("'", n, "' is not a valid axis name"));
    }
    return n;
  }

  char peek() const { return pos_ < t_.size() ? t_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[pos_]))) ++pos_;
  }
  [[noreturn]] void error(const std::string &what) const {
    invalid("spec '", t_, "': column ", pos_ + 1, ": ", what);
  }

  const std::string &t_;
  size_t pos_ = 0;
};

}  // namespace

PartitionSpec PartitionSpec::parse(const std::string &text) {
  PartitionSpec spec;
  spec.dims_ = SpecParser(text).parse();
  if (spec.dims_.size() > SPMD_MAX_NDIM)
    invalid("spec '", text, "': ", spec.dims_.size(), " dimensions, but a spec has at most ",
            SPMD_MAX_NDIM, " (SPMD_MAX_NDIM), as arrays do");
  check_unique_axes(spec.dims_, cat("spec '", text, "'"));
  return spec;
}

void check_unique_axes(const std::vector<PartitionSpec::Dim> &dims, const std::string &label) {
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < dims.size(); ++i)
    for (const auto &axis : dims[i]) {
      auto [it, fresh] = seen.emplace(axis, i);
      if (!fresh)
        invalid(label, ": axis '", axis, "' is used twice",
                it->second == i ? cat(" in dimension ", i)
                                : cat(" (dimensions ", it->second, " and ", i, ")"));
    }
}

}  // namespace spmd
