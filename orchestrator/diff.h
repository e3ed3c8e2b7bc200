// A line diff (longest common subsequence) and its unified-diff text, for the dashboard's
// kernel page: a candidate against its parent and against the problem's baseline.
#pragma once

#include <string>
#include <vector>

namespace ws {

struct DiffLine {
  char op = ' ';  // ' ' both, '-' only in the old text, '+' only in the new text
  std::string text;
};

/// The old text's lines turned into the new text's, common lines kept. Texts too large for the
/// quadratic table (more than `max_cells` line pairs past the common prefix and suffix) come out
/// as every old line removed and every new line added.
std::vector<DiffLine> DiffLines(const std::string& old_text, const std::string& new_text,
                                size_t max_cells = size_t{16} << 20);

/// Unified diff ("--- a", "+++ b", "@@ -l,n +l,n @@" hunks with `context` lines around changes).
/// Empty when the texts are equal.
std::string UnifiedDiff(const std::string& old_text, const std::string& new_text,
                        const std::string& old_name, const std::string& new_name, int context = 3);

}  // namespace ws
