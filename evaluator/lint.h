// `warpsmith problems lint`: rejects degenerate problems, ones a wrong kernel could pass.
#pragma once

#include <string>
#include <vector>

#include "problems/problems.h"

namespace ws {

/// Findings for one loaded problem, each a sentence naming what is wrong; empty when clean.
/// Checks the spec (shapes of every kind, cost, sources, one tolerance per output, tolerances no
/// looser than the output format's own error, registered custom checkers, the tolerance's
/// reasoning in the description), then runs the CPU reference at the smallest test shape on two
/// input seeds: an output that does not change with its inputs, or that is more than 99% one
/// value, is a finding when every test shape shows it.
std::vector<std::string> LintProblem(const ProblemSpec& spec);

}  // namespace ws
