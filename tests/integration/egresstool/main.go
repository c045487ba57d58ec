// egresstool is egress.bats' servers and client (built static by `make
// fixtures`): the servers run in the guest on the addresses of a dummy
// interface, the client inside a sandbox under egress, where it speaks each
// of the proxy's three forms and tries every way around it.
//
//	egresstool serve ADDR...          HTTP :80, HTTPS :443 (any name), echo :7000 on each ADDR
//	egresstool connect PROXY HOST:PORT        CONNECT, then one echo line (port 7000)
//	egresstool tls PROXY HOST:PORT SNI        CONNECT, then TLS naming SNI and GET /
//	egresstool http PROXY URL [HOST]          GET URL through the proxy (Host header HOST)
//	egresstool socks PROXY HOST:PORT          SOCKS5 by name, then GET / (port 80) or echo
//	egresstool direct ADDR:PORT               a TCP connect() without the proxy
//	egresstool udp ADDR:PORT                  one UDP datagram
//	egresstool dns ADDR                       a DNS query over UDP and over TCP to ADDR:53
//	egresstool get PROXY|- URL                download URL through the proxy, or directly (-): bytes, seconds, first byte
//
// Each client command prints one line per step and exits 0 only if the
// request got through.
package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: egresstool serve|connect|tls|http|socks|direct|udp|dns|get ...")
	}
	args := os.Args[2:]
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(args)
	case "connect":
		need(args, 2)
		err = connectCmd(args[0], args[1])
	case "tls":
		need(args, 3)
		err = tlsCmd(args[0], args[1], args[2])
	case "http":
		if len(args) < 2 {
			need(args, 2)
		}
		host := ""
		if len(args) > 2 {
			host = args[2]
		}
		err = httpCmd(args[0], args[1], host)
	case "socks":
		need(args, 2)
		err = socksCmd(args[0], args[1])
	case "direct":
		need(args, 1)
		err = directCmd(args[0])
	case "udp":
		need(args, 1)
		err = udpCmd(args[0])
	case "dns":
		need(args, 1)
		err = dnsCmd(args[0])
	case "get":
		need(args, 2)
		err = getCmd(args[0], args[1])
	default:
		fail("unknown command " + os.Args[1])
	}
	if err != nil {
		fail(err.Error())
	}
}

func need(args []string, n int) {
	if len(args) != n {
		fail(fmt.Sprintf("want %d arguments, got %d", n, len(args)))
	}
}

func fail(msg string) {
	fmt.Println("failed:", msg)
	os.Exit(1)
}

const timeout = 20 * time.Second

// serve runs the servers until killed.
func serve(addrs []string) error {
	cert, err := selfSigned()
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if n, err := strconv.ParseInt(r.URL.Query().Get("bytes"), 10, 64); err == nil && n > 0 {
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
			buf := make([]byte, 256<<10)
			for n > 0 {
				k := min(n, int64(len(buf)))
				if _, err := w.Write(buf[:k]); err != nil {
					return
				}
				n -= k
			}
			return
		}
		fmt.Fprintf(w, "hello from %s (Host %s, TLS %v)\n", r.Context().Value(http.LocalAddrContextKey), r.Host, r.TLS != nil)
	})
	errs := make(chan error, 3*len(addrs))
	for _, a := range addrs {
		go func() { errs <- http.ListenAndServe(net.JoinHostPort(a, "80"), mux) }()
		go func() {
			srv := &http.Server{Addr: net.JoinHostPort(a, "443"), Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
			errs <- srv.ListenAndServeTLS("", "")
		}()
		go func() { errs <- echo(net.JoinHostPort(a, "7000")) }()
	}
	return <-errs
}

func echo(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() { _, _ = io.Copy(c, c); c.Close() }()
	}
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "egress.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), DNSNames: []string{"*.test"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// connectTo opens a CONNECT tunnel to dest; it fails with the proxy's
// status line and reason when refused.
func connectTo(proxy, dest string) (net.Conn, *bufio.Reader, error) {
	c, err := net.DialTimeout("tcp", proxy, timeout)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy: %w", err)
	}
	_ = c.SetDeadline(time.Now().Add(timeout))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("CONNECT %s: %w", dest, err)
	}
	fmt.Println("CONNECT", dest, "->", resp.Status)
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		c.Close()
		return nil, nil, fmt.Errorf("refused: %s %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return c, br, nil
}

func connectCmd(proxy, dest string) error {
	c, br, err := connectTo(proxy, dest)
	if err != nil {
		return err
	}
	defer c.Close()
	return echoOnce(c, br)
}

func echoOnce(c net.Conn, br *bufio.Reader) error {
	fmt.Fprint(c, "ping\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "ping\n" {
		return fmt.Errorf("echo: %q %w", line, err)
	}
	fmt.Println("echo ok")
	return nil
}

func tlsCmd(proxy, dest, sni string) error {
	c, br, err := connectTo(proxy, dest)
	if err != nil {
		return err
	}
	defer c.Close()
	if br.Buffered() > 0 {
		return errors.New("bytes after the CONNECT reply")
	}
	tc := tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("TLS naming %s: %w", sni, err)
	}
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", sni)
	return printResponse(bufio.NewReader(tc))
}

func printResponse(br *bufio.Reader) error {
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("response: %w", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Println(resp.Status, strings.TrimSpace(string(body)))
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

func httpCmd(proxy, rawURL, host string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", proxy, timeout)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if host == "" {
		host = u.Host
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", u.String(), host)
	return printResponse(bufio.NewReader(c))
}

func socksCmd(proxy, dest string) error {
	host, portText, err := net.SplitHostPort(dest)
	if err != nil {
		return err
	}
	port, _ := strconv.Atoi(portText)
	c, err := net.DialTimeout("tcp", proxy, timeout)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	br := bufio.NewReader(c)
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		return err
	}
	var hello [2]byte
	if _, err := io.ReadFull(br, hello[:]); err != nil || hello != [2]byte{5, 0} {
		return fmt.Errorf("SOCKS greeting: %v %w", hello, err)
	}
	req := []byte{5, 1, 0, 3, byte(len(host))}
	req = append(req, host...)
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	if _, err := c.Write(req); err != nil {
		return err
	}
	var rep [4]byte
	if _, err := io.ReadFull(br, rep[:]); err != nil {
		return fmt.Errorf("SOCKS reply: %w", err)
	}
	fmt.Println("SOCKS", dest, "-> reply", rep[1])
	if rep[1] != 0 {
		return fmt.Errorf("refused: SOCKS reply %d", rep[1])
	}
	skip := map[byte]int{1: 4, 4: 16}[rep[3]] + 2
	if rep[3] == 3 {
		n, _ := br.ReadByte()
		skip = int(n) + 2
	}
	if _, err := io.ReadFull(br, make([]byte, skip)); err != nil {
		return err
	}
	if port == 80 {
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
		return printResponse(br)
	}
	return echoOnce(c, br)
}

func directCmd(dest string) error {
	c, err := net.DialTimeout("tcp", dest, 5*time.Second)
	if err != nil {
		return fmt.Errorf("connect %s: %w", dest, err)
	}
	c.Close()
	fmt.Println("connected to", dest)
	return nil
}

func udpCmd(dest string) error {
	c, err := net.Dial("udp", dest)
	if err != nil {
		return fmt.Errorf("udp %s: %w", dest, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("datagram")); err != nil {
		return fmt.Errorf("udp %s: %w", dest, err)
	}
	fmt.Println("sent a datagram to", dest)
	return nil
}

// dnsCmd sends one query for ok.test over UDP and over TCP; it succeeds if
// either gets an answer.
func dnsCmd(server string) error {
	q := []byte{0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 'o', 'k', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1}
	var errs []string
	if c, err := net.DialTimeout("udp", net.JoinHostPort(server, "53"), 5*time.Second); err != nil {
		errs = append(errs, "udp: "+err.Error())
	} else {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(q); err != nil {
			errs = append(errs, "udp: "+err.Error())
		} else if _, err := c.Read(make([]byte, 512)); err != nil {
			errs = append(errs, "udp: "+err.Error())
		} else {
			fmt.Println("a DNS answer over UDP")
			return nil
		}
		c.Close()
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(server, "53"), 5*time.Second); err != nil {
		errs = append(errs, "tcp: "+err.Error())
	} else {
		c.Close()
		fmt.Println("a DNS connection over TCP")
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

func getCmd(proxy, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	start := time.Now()
	// "-": straight to the server (the bench's direct side), in origin form.
	target, line := proxy, u.String()
	if proxy == "-" {
		target, line = u.Host, u.RequestURI()
		if u.Port() == "" {
			target = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	c, err := net.DialTimeout("tcp", target, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", line, u.Host)
	br := bufio.NewReaderSize(c, 256<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	first := time.Since(start)
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return err
	}
	fmt.Printf("bytes %d seconds %.3f first %.3f\n", n, time.Since(start).Seconds(), first.Seconds())
	return nil
}
