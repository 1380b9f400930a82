package metrics

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// The endpoint speaks just enough HTTP/1.x for scrapers, probes and curl:
// one GET (or HEAD) per connection, answered with Content-Length and
// Connection: close. net/http would cost every start of every tool its
// package initialisation (see registry).

const (
	maxHeaderLines = 100
	maxLine        = 8 << 10
	// connTimeout bounds one exchange: the slowest answer waits ProbeBound
	// for the member's loop.
	connTimeout = ProbeBound + 10*time.Second
)

// serve accepts connections until ln is closed.
func (s *Server) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go s.exchange(c)
	}
}

// exchange reads one request and writes its answer.
func (s *Server) exchange(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(connTimeout))
	r := bufio.NewReaderSize(c, 4096)
	method, target, err := readRequest(r)
	code, body := 400, []byte("bad request\n")
	if err == nil {
		path, _, _ := strings.Cut(target, "?")
		switch {
		case method != "GET" && method != "HEAD":
			code, body = 405, []byte("only GET\n")
		default:
			ctx, cancel := context.WithCancel(context.Background())
			code, body = s.page(ctx, path)
			cancel()
		}
	}
	ctype := "text/plain; charset=utf-8"
	if code == 200 && strings.HasPrefix(target, "/metrics") {
		ctype = "text/plain; version=0.0.4; charset=utf-8"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", code, statusText(code), ctype, len(body))
	if method != "HEAD" {
		b.Write(body)
	}
	_, _ = c.Write(b.Bytes())
}

// readRequest reads the request line and skips the headers.
func readRequest(r *bufio.Reader) (method, target string, err error) {
	line, err := readLine(r)
	if err != nil {
		return "", "", err
	}
	f := strings.Fields(line)
	if len(f) != 3 || !strings.HasPrefix(f[1], "/") || !strings.HasPrefix(f[2], "HTTP/1.") {
		return "", "", fmt.Errorf("metrics: bad request line %q", line)
	}
	for range maxHeaderLines {
		h, err := readLine(r)
		if err != nil {
			return "", "", err
		}
		if h == "" {
			return f[0], f[1], nil
		}
	}
	return "", "", fmt.Errorf("metrics: more than %d header lines", maxHeaderLines)
}

func readLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, more, err := r.ReadLine()
		if err != nil {
			return "", err
		}
		b = append(b, chunk...)
		if len(b) > maxLine {
			return "", fmt.Errorf("metrics: line longer than %d bytes", maxLine)
		}
		if !more {
			return string(b), nil
		}
	}
}

func statusText(code int) string {
	switch code {
	case 200:
		return "OK"
	case 400:
		return "Bad Request"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 503:
		return "Service Unavailable"
	}
	return "Status"
}
