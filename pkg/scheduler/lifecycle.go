package scheduler

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/locuscache/locus/internal/tlsreload"
	"github.com/locuscache/locus/pkg/membership"
	"github.com/locuscache/locus/pkg/placement"
	schedulerv1 "github.com/locuscache/locus/proto/scheduler/v1"
)

// Start binds the HTTP and gRPC listeners, connects to etcd (when
// configured) and reads the cluster config, joins the gossip as an
// observer, and starts serving. Standalone, it places at once; with etcd
// it campaigns for the leadership in the background and places once
// elected. It returns when the scheduler serves (or with the first error;
// then everything it started is stopped). Call it once.
func (s *Scheduler) Start(ctx context.Context) (err error) {
	err = ErrStopped
	s.startOnce.Do(func() { err = s.start(ctx) })
	return err
}

func (s *Scheduler) start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			s.closeAll()
		}
	}()
	if s.httpLn, err = net.Listen("tcp", s.cfg.HTTPAddr); err != nil {
		return fmt.Errorf("scheduler: cannot listen on the HTTP address %s: %w", s.cfg.HTTPAddr, err)
	}
	if s.grpcLn, err = net.Listen("tcp", s.cfg.GRPCAddr); err != nil {
		return fmt.Errorf("scheduler: cannot listen on the gRPC address %s: %w", s.cfg.GRPCAddr, err)
	}
	s.httpAdv = advertised(s.cfg.HTTPAdvertiseAddr, s.httpLn.Addr())
	s.grpcAdv = advertised(s.cfg.GRPCAdvertiseAddr, s.grpcLn.Addr())

	if s.cfg.Etcd.Enabled() {
		if s.ha, err = newHA(ctx, s); err != nil {
			return err
		}
	}

	if s.cfg.Membership != nil {
		s.mem = s.cfg.Membership
	} else if err = s.joinGossip(ctx); err != nil {
		return err
	}

	// Serve.
	s.health = health.NewServer()
	s.setServing(false)
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(s.cfg.MaxBatchBodyBytes)),
		grpc.UnaryInterceptor(s.grpcInterceptor),
	}
	if s.cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.cfg.TLS)))
	}
	s.grpcSrv = grpc.NewServer(opts...)
	schedulerv1.RegisterSchedulerServiceServer(s.grpcSrv, &grpcService{s: s})
	healthpb.RegisterHealthServer(s.grpcSrv, s.health)
	reflection.Register(s.grpcSrv)
	s.httpSrv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          tlsreload.ServerErrorLog(s.log), // its lines start "http: "
		ConnState:         s.httpConns.hook,
	}
	httpLn := s.httpLn
	if s.cfg.TLS != nil {
		httpLn = tls.NewListener(httpLn, s.cfg.TLS)
	}

	runCtx, cancel := context.WithCancel(context.Background())
	go func() { <-s.stop; cancel() }()
	// The first View is applied before the membership loop starts, which
	// then applies every newer one: a View read here and applied after
	// the loop had applied a newer one would stay (the loop waits for a
	// View other than its own last), placing on nodes that have left.
	s.applyView(s.mem.View())
	s.wg.Add(2)
	go s.timerLoop()
	go s.membershipLoop(runCtx)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.httpSrv.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("scheduler: HTTP server stopped", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		if err := s.grpcSrv.Serve(s.grpcLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.log.Error("scheduler: gRPC server stopped", "err", err)
		}
	}()

	if s.ha == nil {
		p, err := placement.New(s.cfg.Placement)
		if err != nil {
			return err
		}
		if err := s.install(p); err != nil { // with the View applied last
			return err
		}
	} else {
		s.wg.Add(1)
		go s.ha.run(runCtx)
	}
	s.ready.Store(true)
	st := s.Settings()
	s.checkReplication(s.mem.View(), &st)
	s.log.Info("scheduler: serving", "http", s.httpAdv, "grpc", s.grpcAdv, "standalone", s.ha == nil,
		"block_size", fromNodes(st.BlockSize), "replication", s.Replication(), "replication_configured", fromNodes(st.Replication), "locality_wait", st.LocalityWait)
	return nil
}

// fromNodes is a configured block size or replication as the logs print
// it: the value, or "from nodes" for 0, which means placement takes the
// cache nodes' value (Config.BlockSize, Config.Replication), not a value
// of 0.
func fromNodes[T int | int64](n T) any {
	if n > 0 {
		return n
	}
	return "from nodes"
}

// advertised returns adv, or the bound address.
func advertised(adv string, bound net.Addr) string {
	if adv != "" {
		return adv
	}
	return bound.String()
}

// joinGossip creates the observer membership and joins the seeds, retrying
// for JoinTimeout while none answers; a refusal fails at once.
func (s *Scheduler) joinGossip(ctx context.Context) error {
	meta := membership.NodeMeta{ID: s.cfg.NodeID, Role: membership.RoleObserver, GRPCAddr: s.grpcAdv, HTTPAddr: s.httpAdv}
	if checkAdv(meta.GRPCAddr) != nil {
		meta.GRPCAddr = "" // a wildcard bind: announce nothing rather than an undialable address
	}
	if checkAdv(meta.HTTPAddr) != nil {
		meta.HTTPAddr = ""
	}
	m, err := membership.New(membership.Config{
		Meta:          meta,
		BindAddr:      s.cfg.GossipAddr,
		AdvertiseAddr: s.cfg.GossipAdvertiseAddr,
		KeyFile:       s.cfg.GossipKeyFile,
		Tuning:        s.cfg.GossipTuning,
		Logger:        s.cfg.Logger.With("component", "membership"),
	})
	if err != nil {
		return fmt.Errorf("scheduler: gossip: %w", err)
	}
	s.ownMem, s.mem = m, m
	if len(s.cfg.Join) == 0 {
		return nil
	}
	deadline := time.Now().Add(s.cfg.JoinTimeout)
	for {
		n, err := m.Join(s.cfg.Join)
		if err == nil && n > 0 {
			s.log.Info("scheduler: joined the gossip", "seeds", s.cfg.Join, "reached", n, "members", len(m.View().Members))
			return nil
		}
		if errors.Is(err, membership.ErrIncompatible) || errors.Is(err, membership.ErrDuplicateID) || errors.Is(err, membership.ErrBadAddress) {
			return fmt.Errorf("scheduler: cannot join the gossip: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("scheduler: cannot join the gossip through %v within %v: %w", s.cfg.Join, s.cfg.JoinTimeout, err)
		}
		s.log.Warn("scheduler: join failed; retrying", "seeds", s.cfg.Join, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func checkAdv(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() || host == "" {
		return errors.New("wildcard")
	}
	return nil
}

// HTTPAddr and GRPCAddr return the advertised listen addresses (the bound
// ones unless Config says otherwise), valid after Start.
func (s *Scheduler) HTTPAddr() string { return s.httpAdv }

// GRPCAddr: see HTTPAddr.
func (s *Scheduler) GRPCAddr() string { return s.grpcAdv }

// GossipAddr returns the gossip address of the membership Start created
// ("" when Config.Membership was given).
func (s *Scheduler) GossipAddr() string {
	if s.ownMem == nil {
		return ""
	}
	return s.ownMem.GossipAddr()
}

// updateServingLocked sets the gRPC health status from the state: SERVING
// while this scheduler places, that is while it leads, is not stopping,
// and its block size is the cache nodes' (as /readyz says of a leader; a
// follower is NOT_SERVING, since gRPC calls are not forwarded). Called when
// any of these changes: leadership, a View, the cluster config. Caller
// holds mu.
func (s *Scheduler) updateServingLocked() {
	s.setServing(s.p != nil && !s.stopped && !s.stopping.Load() && s.blockSizeError() == nil)
}

// setServing sets the gRPC health status ("" and the SchedulerService).
func (s *Scheduler) setServing(on bool) {
	if s.health == nil {
		return
	}
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if on {
		st = healthpb.HealthCheckResponse_SERVING
	}
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus(schedulerv1.SchedulerService_ServiceDesc.ServiceName, st)
}

// Shutdown stops gracefully: /readyz turns 503 and new calls get
// ErrStopped, waiting calls are answered (503), the listeners stop after
// in-flight calls end (or ctx does) and idle client connections are
// closed at once (an open connection that carries no call does not delay
// it), the leader flushes its counters to etcd and resigns, and the
// scheduler leaves the gossip. It is safe to call more than once.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	var err error
	s.endOnce.Do(func() { err = s.shutdown(ctx) })
	return err
}

func (s *Scheduler) shutdown(ctx context.Context) error {
	s.stopping.Store(true)
	s.log.Info("scheduler: shutting down")
	s.mu.Lock()
	s.stopped = true
	s.failWaitersLocked(fmt.Errorf("%w: shutting down", ErrStopped))
	s.mu.Unlock()
	s.setServing(false)
	var errs []error
	if s.httpSrv != nil {
		s.stopHTTP(ctx)
	}
	if s.grpcSrv != nil {
		done := make(chan struct{})
		go func() { s.grpcSrv.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			s.grpcSrv.Stop()
		}
	}
	if s.ha != nil {
		if err := s.ha.shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	s.uninstall(ErrStopped)
	if s.ownMem != nil {
		if err := s.ownMem.Leave(ctx); err != nil && !errors.Is(err, membership.ErrClosed) {
			errs = append(errs, fmt.Errorf("scheduler: leaving the gossip: %w", err))
		}
	}
	close(s.stop)
	s.wg.Wait()
	if s.ha != nil {
		s.ha.close()
	}
	return errors.Join(errs...)
}

// stopHTTP stops the HTTP server: the listener closes, the calls in flight
// are answered (until ctx ends), then every connection is closed.
// http.Server.Shutdown alone closes idle keep-alive connections at once
// but counts a connection that was accepted and never sent a request
// (StateNew) as busy for 5 s, so an idle client holding one open would
// delay every shutdown by 5 s: once no call is in flight (httpConns), Close
// ends those connections.
func (s *Scheduler) stopHTTP(ctx context.Context) {
	s.httpSrv.SetKeepAlivesEnabled(false) // answers in flight close their connections
	done := make(chan struct{})
	go func() {
		_ = s.httpSrv.Shutdown(ctx)
		close(done)
	}()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
		case <-tick.C:
			if s.httpConns.busy() > 0 {
				continue
			}
		}
		_ = s.httpSrv.Close()
		<-done
		return
	}
}

// connTracker counts the HTTP connections with a call in flight
// (http.StateActive), through the server's ConnState hook, which net/http
// calls from the connections' goroutines.
type connTracker struct {
	mu     sync.Mutex
	state  map[net.Conn]http.ConnState // guarded by mu: the last state of each open connection
	active int                         // guarded by mu: connections in StateActive
}

func (c *connTracker) hook(conn net.Conn, st http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == nil {
		c.state = make(map[net.Conn]http.ConnState)
	}
	if c.state[conn] == http.StateActive {
		c.active--
	}
	if st == http.StateActive {
		c.active++
	}
	if st == http.StateClosed || st == http.StateHijacked {
		delete(c.state, conn)
	} else {
		c.state[conn] = st
	}
}

// busy returns the number of connections with a call in flight.
func (c *connTracker) busy() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active
}

// closeAll releases what a failed Start acquired.
func (s *Scheduler) closeAll() {
	s.endOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		s.mu.Unlock()
		if s.httpSrv != nil {
			_ = s.httpSrv.Close()
		} else if s.httpLn != nil {
			_ = s.httpLn.Close()
		}
		if s.grpcSrv != nil {
			s.grpcSrv.Stop()
		} else if s.grpcLn != nil {
			_ = s.grpcLn.Close()
		}
		if s.ownMem != nil {
			_ = s.ownMem.Shutdown()
		}
		select {
		case <-s.stop:
		default:
			close(s.stop)
		}
		s.wg.Wait()
		if s.ha != nil {
			s.ha.close()
		}
	})
}
