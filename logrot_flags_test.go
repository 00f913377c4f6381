package main

import (
	"strings"
	"testing"
)

func TestParseLogMaxSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		err  string
	}{
		{"10485760", 10485760, ""},
		{"10Mi", 10 << 20, ""},
		{"500Ki", 500 << 10, ""},
		{"1G", 1e9, ""},
		{"0", 0, "must be positive"},
		{"-1", 0, "must be positive"},
		{"1.5", 0, "not a whole number"},
		{"ten", 0, "neither bytes nor a quantity"},
		{"", 0, "neither bytes nor a quantity"},
	} {
		got, err := parseLogMaxSize(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "--container-log-max-size") {
				t.Errorf("parseLogMaxSize(%q) = %d, %v; want an error naming the flag and %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseLogMaxSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}
