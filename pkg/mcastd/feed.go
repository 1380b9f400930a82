package mcastd

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// Feed reads lines from r and hands them (decoded with b64) to send, in
// batches of what is already there (at most batchMax lines): a fast
// producer fills frames, a slow one sends each line at once. A line longer
// than maxLine bytes (decoded), or bad base64, is a usage error naming
// the line. A line is its bytes up to the newline: a carriage return
// before it is part of the line.
func Feed(ctx context.Context, r io.Reader, b64 bool, maxLine int, send func([][]byte) error) (uint64, error) {
	type chunk struct {
		lines [][]byte
		err   error
	}
	// The reader hands over what it has read whenever the sender is ready
	// for more: under load, big batches; when lines trickle in, one at a
	// time.
	chunks := make(chan chunk, 1)
	go func() {
		defer close(chunks)
		var n uint64 // lines so far
		emit := func(c chunk) bool {
			select {
			case chunks <- c:
				return true
			case <-ctx.Done():
				return false
			}
		}
		// Each read returns what stdin has: its complete lines are one
		// batch (a trickle sends lines one by one, a flood in bulk).
		buf := make([]byte, 0, 256<<10)
		for {
			if len(buf) == cap(buf) {
				grown := make([]byte, len(buf), 2*cap(buf))
				copy(grown, buf)
				buf = grown
			}
			k, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+k]
			var batch [][]byte
			start := 0
			for i := 0; i < len(buf); i++ {
				if buf[i] != '\n' {
					continue
				}
				n++
				p, perr := decodeLine(buf[start:i], n, b64, maxLine)
				if perr != nil {
					emit(chunk{lines: batch, err: perr})
					return
				}
				batch = append(batch, p)
				start = i + 1
				if len(batch) == batchMax {
					if !emit(chunk{lines: batch}) {
						return
					}
					batch = nil
				}
			}
			rest := copy(buf, buf[start:])
			buf = buf[:rest]
			if limit := maxLine + 1; rest > limit && !b64 || rest > limit/3*4+8 {
				emit(chunk{lines: batch, err: cli.Exitf(cli.ExitUsage, "line %d is over the limit of %d bytes: split it (nothing of it was sent)", n+1, maxLine)})
				return
			}
			if err != nil {
				var final error
				if len(buf) > 0 { // a last line without a newline
					n++
					p, perr := decodeLine(buf, n, b64, maxLine)
					if perr != nil {
						final = perr
					} else {
						batch = append(batch, p)
					}
				}
				if !errors.Is(err, io.EOF) && final == nil {
					final = cli.Exitf(cli.ExitUsage, "reading stdin: %v", err)
				}
				emit(chunk{lines: batch, err: final})
				return
			}
			if len(batch) > 0 && !emit(chunk{lines: batch}) {
				return
			}
		}
	}()
	var sent uint64
	for ch := range chunks {
		if len(ch.lines) > 0 {
			if err := send(ch.lines); err != nil {
				return sent, err
			}
			sent += uint64(len(ch.lines))
		}
		if ch.err != nil {
			return sent, ch.err
		}
	}
	return sent, ctx.Err()
}

// decodeLine turns the n-th input line into a payload: base64-decoded
// with b64 (where a trailing carriage return is white space), within
// maxLine. Without b64 the line's bytes are the payload, a trailing
// carriage return included.
func decodeLine(line []byte, n uint64, b64 bool, maxLine int) ([]byte, error) {
	p := slices.Clone(line)
	if b64 {
		p = bytes.TrimSuffix(p, []byte{'\r'})
		d, err := base64.StdEncoding.DecodeString(string(p))
		if err != nil {
			return nil, cli.Exitf(cli.ExitUsage, "line %d is not base64: %v", n, err)
		}
		p = d
	}
	if len(p) > maxLine {
		return nil, cli.Exitf(cli.ExitUsage, "line %d is %d bytes, over the limit of %d: split it (nothing of it was sent)", n, len(p), maxLine)
	}
	return p, nil
}

// batchMax is the most lines one request to the member carries.
const batchMax = 256
