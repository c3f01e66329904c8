package s3standin

import (
	"crypto/md5"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// fileBackend is a gofakes3 backend, versioned, that keeps every object
// version's bytes in a file of its own and only their metadata in memory:
// a 100 MB object costs 100 MB of disk and a few hundred bytes of heap.
// gofakes3's own backends either hold the bytes in memory (s3mem, the only
// versioned one) or read a whole object into memory on every put (s3bolt).
type fileBackend struct {
	dir string // objects/ and tmp/ under it

	mu      sync.Mutex
	buckets map[string]*bucket
}

var (
	_ gofakes3.Backend          = (*fileBackend)(nil)
	_ gofakes3.VersionedBackend = (*fileBackend)(nil)
)

type bucket struct {
	created    time.Time
	versioning gofakes3.VersioningStatus
	objects    map[string][]*version // key → its versions, oldest first
}

// version is one version of an object, or a delete marker.
type version struct {
	id           gofakes3.VersionID // "null" for a version written unversioned or suspended
	deleteMarker bool
	size         int64
	md5          []byte
	meta         map[string]string
	modified     time.Time
	path         string // the bytes; "" for a delete marker
}

const nullVersion gofakes3.VersionID = "null"

func newFileBackend(dir string) (*fileBackend, error) {
	for _, d := range []string{"objects", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	return &fileBackend{dir: dir, buckets: map[string]*bucket{}}, nil
}

// newVersionID is a random version id, shaped like S3's (32 URL-safe
// characters).
func newVersionID() gofakes3.VersionID {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._"
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return gofakes3.VersionID(b)
}

func (db *fileBackend) bucket(name string) (*bucket, error) {
	b := db.buckets[name]
	if b == nil {
		return nil, gofakes3.BucketNotFound(name)
	}
	return b, nil
}

// latest is the current version of key (nil: none).
func (b *bucket) latest(key string) *version {
	vs := b.objects[key]
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1]
}

func (db *fileBackend) ListBuckets() ([]gofakes3.BucketInfo, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []gofakes3.BucketInfo
	for name, b := range db.buckets {
		out = append(out, gofakes3.BucketInfo{Name: name, CreationDate: gofakes3.NewContentTime(b.created)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (db *fileBackend) CreateBucket(name string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.buckets[name] != nil {
		return gofakes3.ResourceError(gofakes3.ErrBucketAlreadyExists, name)
	}
	db.buckets[name] = &bucket{created: time.Now(), objects: map[string][]*version{}}
	return nil
}

func (db *fileBackend) BucketExists(name string) (bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.buckets[name] != nil, nil
}

func (db *fileBackend) DeleteBucket(name string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	b, err := db.bucket(name)
	if err != nil {
		return err
	}
	if len(b.objects) > 0 {
		return gofakes3.ResourceError(gofakes3.ErrBucketNotEmpty, name)
	}
	delete(db.buckets, name)
	return nil
}

func (db *fileBackend) ForceDeleteBucket(name string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	b, err := db.bucket(name)
	if err != nil {
		return err
	}
	for _, vs := range b.objects {
		removeFiles(vs)
	}
	delete(db.buckets, name)
	return nil
}

func removeFiles(vs []*version) {
	for _, v := range vs {
		if v.path != "" {
			_ = os.Remove(v.path)
		}
	}
}

// ListBucket lists the current versions that are not delete markers, in
// key order, from after page.Marker, at most page.MaxKeys.
func (db *fileBackend) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	if prefix == nil {
		prefix = &gofakes3.Prefix{}
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	b, err := db.bucket(name)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(b.objects))
	for k := range b.objects {
		if v := b.latest(k); v != nil && !v.deleteMarker {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := gofakes3.NewObjectList()
	var count int64
	var match gofakes3.PrefixMatch
	for _, k := range keys {
		if page.HasMarker && k <= page.Marker {
			continue
		}
		if !prefix.Match(k, &match) {
			continue
		}
		if page.MaxKeys > 0 && count >= page.MaxKeys {
			out.IsTruncated = true
			break
		}
		if match.CommonPrefix {
			out.AddPrefix(match.MatchedPart)
		} else {
			v := b.latest(k)
			out.Add(&gofakes3.Content{Key: k, LastModified: gofakes3.NewContentTime(v.modified), ETag: gofakes3.FormatETag(v.md5), Size: v.size})
		}
		out.NextMarker = k
		count++
	}
	if !out.IsTruncated {
		out.NextMarker = ""
	}
	return out, nil
}

// open is v as a gofakes3 object: its bytes (the range asked for) from its
// file, or none for a head request.
func (v *version) open(key string, rangeRequest *gofakes3.ObjectRangeRequest, head bool) (*gofakes3.Object, error) {
	obj := &gofakes3.Object{Name: key, Metadata: cloneMeta(v.meta), Size: v.size, Hash: v.md5, VersionID: v.id, IsDeleteMarker: v.deleteMarker}
	if v.id == nullVersion {
		obj.VersionID = "" // gofakes3 sends no x-amz-version-id for it, as S3 for an unversioned bucket
	}
	if v.deleteMarker || head {
		obj.Contents = io.NopCloser(strings.NewReader(""))
		return obj, nil
	}
	rng, err := rangeRequest.Range(v.size)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(v.path)
	if err != nil {
		return nil, err
	}
	start, length := int64(0), v.size
	if rng != nil {
		obj.Range = rng
		start, length = rng.Start, rng.Length
	}
	obj.Contents = struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, start, length), f}
	return obj, nil
}

func cloneMeta(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (db *fileBackend) find(bucketName, key string, id gofakes3.VersionID) (*version, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	b, err := db.bucket(bucketName)
	if err != nil {
		return nil, err
	}
	if id == "" {
		v := b.latest(key)
		if v == nil {
			return nil, gofakes3.KeyNotFound(key)
		}
		return v, nil
	}
	for _, v := range b.objects[key] {
		if v.id == id {
			return v, nil
		}
	}
	return nil, gofakes3.ErrNoSuchVersion
}

func (db *fileBackend) GetObject(bucketName, key string, rangeRequest *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	v, err := db.find(bucketName, key, "")
	if err != nil {
		return nil, err
	}
	return v.open(key, rangeRequest, false)
}

func (db *fileBackend) HeadObject(bucketName, key string) (*gofakes3.Object, error) {
	v, err := db.find(bucketName, key, "")
	if err != nil {
		return nil, err
	}
	if v.deleteMarker {
		return nil, gofakes3.KeyNotFound(key)
	}
	return v.open(key, nil, true)
}

func (db *fileBackend) GetObjectVersion(bucketName, key string, id gofakes3.VersionID, rangeRequest *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	v, err := db.find(bucketName, key, id)
	if err != nil {
		return nil, err
	}
	return v.open(key, rangeRequest, false)
}

func (db *fileBackend) HeadObjectVersion(bucketName, key string, id gofakes3.VersionID) (*gofakes3.Object, error) {
	v, err := db.find(bucketName, key, id)
	if err != nil {
		return nil, err
	}
	return v.open(key, nil, true)
}

// PutObject writes the bytes to a temporary file as they arrive (never
// whole in memory), and only once all of them have come, as many as size
// says, makes them the object's new version: a body cut short or refused
// by a reader's check leaves nothing behind.
func (db *fileBackend) PutObject(bucketName, key string, meta map[string]string, input io.Reader, size int64, conditions *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	if ok, err := db.BucketExists(bucketName); err != nil || !ok {
		return gofakes3.PutObjectResult{}, gofakes3.BucketNotFound(bucketName)
	}
	f, err := os.CreateTemp(filepath.Join(db.dir, "tmp"), "put-")
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	tmp := f.Name()
	committed := false
	defer func() {
		if !committed {
			_ = os.Remove(tmp)
		}
	}()
	h := md5.New()
	n, err := io.Copy(io.MultiWriter(f, h), input)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	if n != size {
		return gofakes3.PutObjectResult{}, gofakes3.ErrIncompleteBody
	}
	v := &version{size: n, md5: h.Sum(nil), meta: cloneMeta(meta), modified: time.Now()}

	db.mu.Lock()
	defer db.mu.Unlock()
	b, err := db.bucket(bucketName)
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	if conditions != nil {
		info := &gofakes3.ConditionalObjectInfo{}
		if cur := b.latest(key); cur != nil && !cur.deleteMarker {
			info.Exists, info.Hash = true, cur.md5
		}
		if err := gofakes3.CheckPutConditions(conditions, info); err != nil {
			return gofakes3.PutObjectResult{}, err
		}
	}
	v.path = filepath.Join(db.dir, "objects", string(newVersionID()))
	if err := os.Rename(tmp, v.path); err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	committed = true
	var result gofakes3.PutObjectResult
	if b.versioning == gofakes3.VersioningEnabled {
		v.id = newVersionID()
		result.VersionID = v.id
	} else {
		// Unversioned or suspended: the new version is the null one,
		// replacing the previous null version.
		v.id = nullVersion
		b.dropNull(key)
		if b.versioning == gofakes3.VersioningSuspended {
			result.VersionID = nullVersion
		}
	}
	b.objects[key] = append(b.objects[key], v)
	return result, nil
}

// dropNull removes key's null version (its file too).
func (b *bucket) dropNull(key string) {
	vs := b.objects[key]
	kept := vs[:0]
	for _, v := range vs {
		if v.id == nullVersion {
			removeFiles([]*version{v})
			continue
		}
		kept = append(kept, v)
	}
	b.objects[key] = kept
}

// DeleteObject: in a versioned bucket a new delete marker hides the object
// (its versions stay); in a suspended one the null version goes and a null
// delete marker takes its place; in an unversioned one the object goes.
func (db *fileBackend) DeleteObject(bucketName, key string) (gofakes3.ObjectDeleteResult, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	b, err := db.bucket(bucketName)
	if err != nil {
		return gofakes3.ObjectDeleteResult{}, err
	}
	switch b.versioning {
	case gofakes3.VersioningEnabled:
		// A marker even for a key never held, as S3 adds one.
		m := &version{id: newVersionID(), deleteMarker: true, modified: time.Now()}
		b.objects[key] = append(b.objects[key], m)
		return gofakes3.ObjectDeleteResult{IsDeleteMarker: true, VersionID: m.id}, nil
	case gofakes3.VersioningSuspended:
		b.dropNull(key)
		b.objects[key] = append(b.objects[key], &version{id: nullVersion, deleteMarker: true, modified: time.Now()})
		return gofakes3.ObjectDeleteResult{IsDeleteMarker: true, VersionID: nullVersion}, nil
	}
	removeFiles(b.objects[key])
	delete(b.objects, key)
	return gofakes3.ObjectDeleteResult{}, nil
}

// DeleteObjectVersion removes one version for good (nothing for a version
// or key it does not hold).
func (db *fileBackend) DeleteObjectVersion(bucketName, key string, id gofakes3.VersionID) (gofakes3.ObjectDeleteResult, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	b, err := db.bucket(bucketName)
	if err != nil {
		return gofakes3.ObjectDeleteResult{}, err
	}
	vs := b.objects[key]
	for i, v := range vs {
		if v.id != id {
			continue
		}
		removeFiles([]*version{v})
		b.objects[key] = slices.Delete(slices.Clone(vs), i, i+1)
		if len(b.objects[key]) == 0 {
			delete(b.objects, key)
		}
		return gofakes3.ObjectDeleteResult{IsDeleteMarker: v.deleteMarker, VersionID: v.id}, nil
	}
	return gofakes3.ObjectDeleteResult{}, nil
}

func (db *fileBackend) DeleteMulti(bucketName string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	var out gofakes3.MultiDeleteResult
	for _, k := range keys {
		if _, err := db.DeleteObject(bucketName, k); err != nil {
			return out, err
		}
		out.Deleted = append(out.Deleted, gofakes3.ObjectID{Key: k})
	}
	return out, nil
}

func (db *fileBackend) DeleteMultiVersions(bucketName string, objects ...gofakes3.ObjectID) (gofakes3.MultiDeleteResult, error) {
	var out gofakes3.MultiDeleteResult
	for _, o := range objects {
		if _, err := db.DeleteObjectVersion(bucketName, o.Key, gofakes3.VersionID(o.VersionID)); err != nil {
			return out, err
		}
		out.Deleted = append(out.Deleted, o)
	}
	return out, nil
}

func (db *fileBackend) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	return gofakes3.CopyObject(db, srcBucket, srcKey, dstBucket, dstKey, meta)
}

func (db *fileBackend) VersioningConfiguration(name string) (gofakes3.VersioningConfiguration, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	b, err := db.bucket(name)
	if err != nil {
		return gofakes3.VersioningConfiguration{}, err
	}
	return gofakes3.VersioningConfiguration{Status: b.versioning}, nil
}

func (db *fileBackend) SetVersioningConfiguration(name string, v gofakes3.VersioningConfiguration) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	b, err := db.bucket(name)
	if err != nil {
		return err
	}
	if v.Status != gofakes3.VersioningEnabled && v.Status != gofakes3.VersioningSuspended {
		return fmt.Errorf("s3standin: versioning status %q", v.Status)
	}
	b.versioning = v.Status
	return nil
}

// ListBucketVersions lists every version and delete marker, newest first
// per key, keys in order, from after the markers, at most MaxKeys.
func (db *fileBackend) ListBucketVersions(name string, prefix *gofakes3.Prefix, page *gofakes3.ListBucketVersionsPage) (*gofakes3.ListBucketVersionsResult, error) {
	if prefix == nil {
		prefix = &gofakes3.Prefix{}
	}
	if page == nil {
		page = &gofakes3.ListBucketVersionsPage{}
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	b, err := db.bucket(name)
	if err != nil {
		return nil, err
	}
	out := gofakes3.NewListBucketVersionsResult(name, prefix, page)
	keys := make([]string, 0, len(b.objects))
	for k := range b.objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var count int64
	var match gofakes3.PrefixMatch
	for _, k := range keys {
		// Before the key marker everything was listed already; on it,
		// its versions up to the version marker (all of them without
		// one).
		if page.HasKeyMarker && (k < page.KeyMarker || (k == page.KeyMarker && !page.HasVersionIDMarker)) {
			continue
		}
		if !prefix.Match(k, &match) {
			continue
		}
		if match.CommonPrefix {
			out.AddPrefix(match.MatchedPart)
			continue
		}
		vs := b.objects[k]
		skip := page.HasKeyMarker && k == page.KeyMarker
		for i := len(vs) - 1; i >= 0; i-- {
			v := vs[i]
			if skip {
				skip = v.id != page.VersionIDMarker
				continue
			}
			if page.MaxKeys > 0 && count >= page.MaxKeys {
				out.IsTruncated = true
				return out, nil
			}
			latest := i == len(vs)-1
			if v.deleteMarker {
				out.Versions = append(out.Versions, &gofakes3.DeleteMarker{Key: k, VersionID: v.id, IsLatest: latest, LastModified: gofakes3.NewContentTime(v.modified)})
			} else {
				out.Versions = append(out.Versions, &gofakes3.Version{Key: k, VersionID: v.id, IsLatest: latest,
					LastModified: gofakes3.NewContentTime(v.modified), Size: v.size, ETag: gofakes3.FormatETag(v.md5)})
			}
			out.NextKeyMarker, out.NextVersionIDMarker = k, v.id
			count++
		}
	}
	out.NextKeyMarker, out.NextVersionIDMarker = "", ""
	return out, nil
}
