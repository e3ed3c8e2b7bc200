// The dashboard's pages, rendered on the server from the JSON views (orchestrator/views.h), so a
// page shows exactly what its /api/... route returns. Every string from the store is escaped: a
// kernel's source, an agent's message or a reviewer's reason is text, never markup.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ws {

/// & < > " ' as character references (safe in element text and quoted attributes).
std::string HtmlEscape(std::string_view s);

/// Percent-encodes a URL path segment (unreserved characters kept).
std::string UrlSegment(std::string_view s);

struct PageOptions {
  bool can_act = false;  // a token is configured: show the action forms' help
  int refresh_s = 0;     // > 0: the page reloads itself (meta refresh, no script)
};

std::string LeaderboardPage(const nlohmann::json& rows, const nlohmann::json& campaigns,
                            const PageOptions& o);
std::string ProblemPage(const nlohmann::json& problem, const PageOptions& o);
std::string KernelPage(const nlohmann::json& kernel, const PageOptions& o);
std::string CampaignPage(const nlohmann::json& campaign, const PageOptions& o);
std::string ErrorPage(int status, const std::string& message);

/// The problem page's plot: best time (log scale) against `x_key` ("evaluations" or
/// "gpu_seconds") per series, with dashed baseline and speed-of-light lines.
std::string BestTimeSvg(const nlohmann::json& series, const std::string& x_key,
                        const std::string& x_label);

}  // namespace ws
