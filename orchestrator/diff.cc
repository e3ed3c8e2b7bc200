#include "orchestrator/diff.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

namespace ws {
namespace {

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) {
      out.push_back(s.substr(start));
      break;
    }
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

}  // namespace

std::vector<DiffLine> DiffLines(const std::string& old_text, const std::string& new_text,
                                size_t max_cells) {
  const std::vector<std::string> a = SplitLines(old_text), b = SplitLines(new_text);
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) {
    ++suf;
  }
  const size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  std::vector<DiffLine> out;
  for (size_t i = 0; i < pre; ++i) out.push_back({' ', a[i]});
  if (n > 0 && m > 0 && (n + 1) * (m + 1) <= max_cells) {
    // lcs[i][j]: the LCS length of a[pre+i..] and b[pre+j..] (the middle parts).
    std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;) {
      for (size_t j = m; j-- > 0;) {
        at(i, j) =
            a[pre + i] == b[pre + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
      }
    }
    size_t i = 0, j = 0;
    while (i < n && j < m) {
      if (a[pre + i] == b[pre + j]) {
        out.push_back({' ', a[pre + i]});
        ++i, ++j;
      } else if (at(i + 1, j) >= at(i, j + 1)) {
        out.push_back({'-', a[pre + i++]});
      } else {
        out.push_back({'+', b[pre + j++]});
      }
    }
    for (; i < n; ++i) out.push_back({'-', a[pre + i]});
    for (; j < m; ++j) out.push_back({'+', b[pre + j]});
  } else {
    for (size_t i = 0; i < n; ++i) out.push_back({'-', a[pre + i]});
    for (size_t j = 0; j < m; ++j) out.push_back({'+', b[pre + j]});
  }
  for (size_t i = a.size() - suf; i < a.size(); ++i) out.push_back({' ', a[i]});
  return out;
}

std::string UnifiedDiff(const std::string& old_text, const std::string& new_text,
                        const std::string& old_name, const std::string& new_name, int context) {
  const std::vector<DiffLine> lines = DiffLines(old_text, new_text);
  const size_t ctx = static_cast<size_t>(std::max(0, context));
  std::vector<size_t> changed;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (lines[k].op != ' ')
      changed.push_back(k);
  }
  if (changed.empty())
    return "";
  std::string out = fmt::format("--- {}\n+++ {}\n", old_name, new_name);
  // Old and new line numbers (1-based) of each diff line's position.
  std::vector<size_t> old_no(lines.size() + 1), new_no(lines.size() + 1);
  size_t o = 1, nw = 1;
  for (size_t k = 0; k < lines.size(); ++k) {
    old_no[k] = o;
    new_no[k] = nw;
    if (lines[k].op != '+')
      ++o;
    if (lines[k].op != '-')
      ++nw;
  }
  old_no[lines.size()] = o;
  new_no[lines.size()] = nw;
  size_t c = 0;
  while (c < changed.size()) {
    size_t begin = changed[c] >= ctx ? changed[c] - ctx : 0;
    size_t end = std::min(lines.size(), changed[c] + 1 + ctx);
    ++c;
    // Changes whose context windows touch share one hunk.
    while (c < changed.size() && changed[c] <= end + ctx) {
      end = std::min(lines.size(), changed[c] + 1 + ctx);
      ++c;
    }
    size_t old_count = 0, new_count = 0;
    for (size_t k = begin; k < end; ++k) {
      old_count += lines[k].op != '+';
      new_count += lines[k].op != '-';
    }
    // An empty side is numbered by the line before it, as diff -u does.
    const size_t old_start = old_count ? old_no[begin] : old_no[begin] - 1;
    const size_t new_start = new_count ? new_no[begin] : new_no[begin] - 1;
    out += fmt::format("@@ -{},{} +{},{} @@\n", old_start, old_count, new_start, new_count);
    for (size_t k = begin; k < end; ++k) {
      out += lines[k].op;
      out += lines[k].text;
      out += '\n';
    }
  }
  return out;
}

}  // namespace ws
