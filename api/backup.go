package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/auth"
)

// StoreBackup writes an online backup of the state store: a consistent
// snapshot taken while writers go on (statestore/bolt's archive: a
// manifest with the key files' fingerprints, then the database). Nothing
// is written to w when the snapshot fails.
type StoreBackup interface {
	Backup(ctx context.Context, w io.Writer) error
}

// DefaultBackups is how many backups the server streams at once when
// Config.Backups is unset; one more is refused with a 503.
const DefaultBackups = 1

// backupRetryAfter is the Retry-After, in seconds, of a backup refused
// because others are under way.
const backupRetryAfter = 30

// backupWriteWindow is how long one write of the backup stream may take
// (each write extends the server's write deadline by it).
const backupWriteWindow = time.Minute

func (s *Server) storeRoutes() []route {
	n := s.cfg.Backups
	if n <= 0 {
		n = DefaultBackups
	}
	slots := make(chan struct{}, n)
	return []route{
		{Method: "GET", Path: v1 + "/admin/store/backup", Role: auth.RoleAdmin, Audited: true, Produces: "application/octet-stream",
			Problems: []int{http.StatusNotImplemented, http.StatusServiceUnavailable},
			Summary:  "an online backup of the state: a tar of manifest.json (the key files' fingerprints) and the bbolt database, consistent as of the call",
			handler:  s.storeBackup(slots)},
	}
}

// storeBackup streams a backup. At most cap(slots) run at once; the
// snapshot is taken (and spooled) before the answer starts, so a failed
// snapshot is a problem answer; a stream that breaks afterwards ends
// short, which the reader's check of the archive finds.
func (s *Server) storeBackup(slots chan struct{}) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Backup == nil {
			return problem(http.StatusNotImplemented, "this server's state store has no online backup here: on etcd, back up with `etcdctl snapshot save` (docs/operations.md)")
		}
		auditWhat(c, AuditWhat{Action: "store.backup"})
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			c.Response().Header().Set("Retry-After", strconv.Itoa(backupRetryAfter))
			return problem(http.StatusServiceUnavailable, "another backup is under way (at most "+strconv.Itoa(cap(slots))+" at once): try again when it ends")
		}
		w := c.Response()
		out := &backupWriter{w: w, rc: http.NewResponseController(w), start: func() {
			w.Header().Set(echo.HeaderContentType, "application/octet-stream")
			w.Header().Set(echo.HeaderContentDisposition, `attachment; filename="slipway-backup.tar"`)
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
		}}
		err := s.cfg.Backup.Backup(c.Request().Context(), out)
		if err == nil || !w.Committed {
			return err
		}
		// The answer has begun: its status can't change. The stream ends
		// short; the audit record says why.
		c.Set(auditDetailKey, "the backup stream broke after "+strconv.FormatInt(out.n, 10)+" bytes: "+err.Error())
		if !errors.Is(err, context.Canceled) {
			s.log.Error().Err(err).Int64("bytes", out.n).Msg("store backup: the stream broke")
		}
		return nil
	}
}

// backupWriter starts the answer at its first write and extends the
// write deadline before each.
type backupWriter struct {
	w     *echo.Response
	rc    *http.ResponseController
	start func()
	n     int64
}

func (b *backupWriter) Write(p []byte) (int, error) {
	if b.start != nil {
		b.start()
		b.start = nil
	}
	_ = b.rc.SetWriteDeadline(time.Now().Add(backupWriteWindow))
	n, err := b.w.Write(p)
	b.n += int64(n)
	return n, err
}
