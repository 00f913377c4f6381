package printers

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every rune a terminal could act on written as an
// escape: a control character or an invalid byte as \xNN, any other
// non-printable rune (format characters such as U+202E included) as \uNNNN
// or \UNNNNNNNN. Newlines and tabs stay. It is kubectl's answer to
// CVE-2021-25743 (a container's termination message or event text that
// moves the cursor, clears the screen or retitles the window), stricter:
// nothing but printable text reaches the terminal. Escape is idempotent.
func Escape(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case printable(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xFFFF:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += size
	}
	return b.String()
}

func printable(r rune) bool { return r == '\n' || r == '\t' || unicode.IsPrint(r) }

// isPrintable is Escape's fast path: s needs no escape.
func isPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return utf8.ValidString(s[i:]) && strings.IndexFunc(s[i:], func(r rune) bool { return !printable(r) }) < 0
		case c < 0x20 && c != '\n' && c != '\t', c == 0x7f:
			return false
		}
	}
	return true
}

// escapeAll escapes every cell of rows, in place.
func escapeAll(rows ...[]string) {
	for _, r := range rows {
		for i := range r {
			r[i] = Escape(r[i])
		}
	}
}

// The most of one message describe prints: a screenful.
const (
	MaxMessageLines = 20
	MaxMessageBytes = 4 << 10
)

// cutMessage returns msg cut to MaxMessageLines lines and MaxMessageBytes
// bytes (at a rune boundary), with a last line saying how much was cut.
func cutMessage(msg string) string {
	end := len(msg)
	if end > MaxMessageBytes {
		end = MaxMessageBytes
		for end > 0 && !utf8.RuneStart(msg[end]) {
			end--
		}
	}
	if i := nthIndex(msg[:end], '\n', MaxMessageLines); i >= 0 {
		end = i
	}
	if end == len(msg) {
		return msg
	}
	rest := msg[end:]
	return fmt.Sprintf("%s\n[... %d more bytes, %d more lines cut]", msg[:end], len(rest), strings.Count(rest, "\n"))
}

// nthIndex is the index of the nth c in s, or -1.
func nthIndex(s string, c byte, n int) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}
