package knowledge

import (
	"regexp"
	"strings"
)

var (
	mdImage      = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	mdLink       = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	mdRefDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+\S+`)
	mdHeading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	mdListMarker = regexp.MustCompile(`^(\s*)([-*+]|\d{1,9}[.)])\s+`)
	mdRule       = regexp.MustCompile(`^\s{0,3}([-*_])(\s*([-*_]))+\s*$`)
	mdTableRule  = regexp.MustCompile(`^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$`)
	mdFence      = regexp.MustCompile("^\\s{0,3}(```|~~~)")
)

// MarkdownText reads Markdown as the text a reader sees: headings become paragraphs of
// their own (the first one is the title), links and images keep their text, emphasis and
// code marks, list and quote markers, table pipes and rules are dropped, and fenced code is
// kept as it is. A YAML front matter block is dropped, its `title:` used as the title.
func MarkdownText(src string) Document {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var doc Document
	if len(lines) > 0 && strings.TrimSpace(lines[0]) == "---" {
		for i := 1; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			if l == "---" || l == "..." {
				lines = lines[i+1:]
				break
			}
			if v, ok := strings.CutPrefix(l, "title:"); ok {
				doc.Title = strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
	}
	var out []string
	fenced := false
	for _, line := range lines {
		if mdFence.MatchString(line) {
			fenced = !fenced
			out = append(out, "")
			continue
		}
		if fenced {
			out = append(out, line)
			continue
		}
		if mdRule.MatchString(line) || mdTableRule.MatchString(line) || mdRefDef.MatchString(line) {
			out = append(out, "")
			continue
		}
		if m := mdHeading.FindStringSubmatch(line); m != nil {
			text := inlineMarkdown(m[2])
			if doc.Title == "" {
				doc.Title = text
			}
			out = append(out, "", text, "")
			continue
		}
		line = strings.TrimLeft(line, " \t")
		for strings.HasPrefix(line, ">") {
			line = strings.TrimLeft(line[1:], " ")
		}
		line = mdListMarker.ReplaceAllString(line, "")
		if strings.HasPrefix(line, "|") || strings.Count(line, "|") >= 2 {
			line = strings.Join(strings.Fields(strings.ReplaceAll(line, "|", " ")), " ")
		}
		out = append(out, inlineMarkdown(line))
	}
	doc.Text = strings.TrimSpace(strings.Join(out, "\n"))
	return doc
}

// inlineMarkdown drops the marks inside a line: images and links keep their text; bold,
// code and strike-through marks go. Single `*` and `_` stay: they are as often part of a
// word (snake_case, 2*3) as emphasis.
func inlineMarkdown(s string) string {
	s = mdImage.ReplaceAllString(s, "$1")
	s = mdLink.ReplaceAllString(s, "$1")
	return strings.NewReplacer("**", "", "__", "", "~~", "", "`", "").Replace(s)
}
