package api

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var b bytes.Buffer
	fw := &frameWriter{w: &b}
	big := bytes.Repeat([]byte("x"), maxFrame+10)
	if _, err := fw.channel(chanStdout).Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := fw.write(chanStdinClose, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fw.channel(chanStderr).Write(big); err != nil {
		t.Fatal(err)
	}
	type frame struct {
		ch byte
		n  int
	}
	want := []frame{{chanStdout, 5}, {chanStdinClose, 0}, {chanStderr, maxFrame}, {chanStderr, 10}}
	var buf []byte
	for i, w := range want {
		ch, p, err := readFrame(&b, &buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if ch != w.ch || len(p) != w.n {
			t.Errorf("frame %d: channel %d, %d bytes; want channel %d, %d bytes", i, ch, len(p), w.ch, w.n)
		}
	}
	if _, _, err := readFrame(&b, &buf); !errors.Is(err, io.EOF) {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
}

func TestReadFrameErrors(t *testing.T) {
	header := func(ch byte, n uint32) []byte {
		h := []byte{ch, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(h[1:], n)
		return h
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"too big", header(chanStdin, maxFrame+1), errFrameTooBig},
		{"short header", []byte{1, 0}, io.ErrUnexpectedEOF},
		{"short payload", append(header(chanStdout, 10), "abc"...), io.ErrUnexpectedEOF},
		{"header only, then nothing", header(chanStdout, 3), io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf []byte
			_, _, err := readFrame(bytes.NewReader(tt.in), &buf)
			if !errors.Is(err, tt.want) {
				t.Errorf("readFrame: %v, want %v", err, tt.want)
			}
		})
	}
}
