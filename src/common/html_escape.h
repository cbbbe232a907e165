// HTML/XML text escaping, shared by the chat templates' `escape` filter and the SVG writers of
// bench and loadgen.
#pragma once

#include <string>
#include <string_view>

namespace novaserve {

/// markupsafe.escape: & < > " ' become &amp; &lt; &gt; &#34; &#39;; every other byte is copied.
/// The result is valid as XML text and attribute content. Source: markupsafe's escape().
std::string html_escape(std::string_view s);

}  // namespace novaserve
