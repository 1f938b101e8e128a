// importgate console: the little the pages need beyond HTML.
// No inline handlers anywhere (the Content-Security-Policy forbids them);
// everything is wired here. The CSRF token comes from <meta name="csrf-token">.
(function () {
  'use strict';

  var csrfMeta = document.querySelector('meta[name="csrf-token"]');
  var csrf = csrfMeta ? csrfMeta.getAttribute('content') : '';

  function getJSON(url) {
    return fetch(url, { credentials: 'same-origin', headers: { Accept: 'application/json' } })
      .then(function (r) {
        if (r.status === 401) { window.location.reload(); throw new Error('signed out'); }
        if (!r.ok) { throw new Error('HTTP ' + r.status); }
        return r.json();
      });
  }

  // Polls `fn` every `ms` while the page is visible.
  function every(ms, fn) {
    var timer = null;
    function tick() {
      timer = null;
      if (document.hidden) { return; }
      Promise.resolve(fn()).catch(function () {}).then(function (again) {
        if (again !== false && timer === null) { timer = setTimeout(tick, ms); }
      });
    }
    document.addEventListener('visibilitychange', function () {
      if (!document.hidden && timer === null) { tick(); }
    });
    timer = setTimeout(tick, ms);
  }

  // The page's words for the script, in the page's language
  // (<body data-text>), with {name} slots.
  var words = {};
  try { words = JSON.parse(document.body.getAttribute('data-text') || '{}'); } catch (ignored) { words = {}; }
  function say(key, args) {
    var text = words[key] || key;
    Object.keys(args || {}).forEach(function (name) {
      text = text.split('{' + name + '}').join(String(args[name]));
    });
    return text;
  }

  var lang = document.documentElement.getAttribute('lang') || 'en';
  var numbers = new Intl.NumberFormat(lang);
  function formatCount(n) {
    return numbers.format(n);
  }

  // Copy buttons: <button data-copy="#input-id">.
  document.querySelectorAll('[data-copy]').forEach(function (button) {
    button.addEventListener('click', function () {
      var field = document.querySelector(button.getAttribute('data-copy'));
      if (!field) { return; }
      var done = function () {
        var old = button.textContent;
        button.textContent = say('copied');
        setTimeout(function () { button.textContent = old; }, 1500);
      };
      field.select();
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(field.value).then(done, function () {
          document.execCommand('copy'); done();
        });
      } else {
        document.execCommand('copy');
        done();
      }
    });
  });

  // Follows the service's events (server-sent, the signed-in key's scope):
  // `onJob(id)` for every event about a job, and `onOpen()` whenever the
  // stream (re)opens, to catch up on what happened while it was closed.
  // Where the browser has no EventSource, or the stream is refused, a slow
  // poll (`onOpen` every 30 s) stands in.
  function followEvents(onJob, onOpen) {
    var polling = false;
    function poll() {
      if (polling) { return; }
      polling = true;
      every(30000, onOpen);
    }
    if (!window.EventSource) { poll(); return; }
    var source = new EventSource('/console/events/stream');
    source.addEventListener('open', function () { Promise.resolve(onOpen()).catch(function () {}); });
    source.addEventListener('error', function () {
      // CONNECTING: the browser tries again by itself (with Last-Event-ID).
      if (source.readyState === EventSource.CLOSED) { poll(); }
    });
    var handle = function (ev) {
      var body = null;
      try { body = JSON.parse(ev.data); } catch (ignored) { return; }
      if (body && body.data && body.data.job) { onJob(body.data.job.id, body); }
    };
    ['job.created', 'job.awaiting_approval', 'job.invalid', 'job.failed', 'job.approved',
      'job.committed', 'job.rejected', 'job.cancelled', 'job.expired', 'job.rollback_requested',
      'job.rolled_back', 'job.rollback_failed', 'job.revised', 'job.purged'].forEach(function (type) {
      source.addEventListener(type, handle);
    });
    window.addEventListener('pagehide', function () { source.close(); });
  }

  // The job list: states and counts follow the service without a reload.
  var jobs = document.querySelector('[data-live-jobs]');
  if (jobs) {
    var liveStatus = document.getElementById('live-status');
    var refreshRows = function (only) {
      var rows = jobs.querySelectorAll('tr[data-job-id]');
      var ids = Array.prototype.map.call(rows, function (r) { return r.getAttribute('data-job-id'); });
      if (only) { ids = ids.filter(function (id) { return id === only; }); }
      if (ids.length === 0) { return; }
      return getJSON(jobs.getAttribute('data-live-jobs') + '?ids=' + encodeURIComponent(ids.join(',')))
        .then(function (body) {
          body.jobs.forEach(function (j) {
            var row = jobs.querySelector('tr[data-job-id="' + j.id + '"]');
            if (!row) { return; }
            var badge = row.querySelector('.badge');
            if (badge && badge.getAttribute('data-state') !== j.state) {
              badge.className = 'badge state-' + j.state;
              badge.setAttribute('data-state', j.state);
              badge.textContent = j.label;
              if (liveStatus) { liveStatus.textContent = say('now', { job: j.id, state: j.label }); }
            }
            var rowsCell = row.querySelector('[data-count="rows"]');
            if (rowsCell) { rowsCell.textContent = formatCount(j.counts.rows); }
            var errCell = row.querySelector('[data-count="errors"]');
            if (errCell) { errCell.textContent = formatCount(j.counts.errors); }
          });
        });
    };
    followEvents(function (id) {
      if (jobs.querySelector('tr[data-job-id="' + id + '"]')) {
        refreshRows(id).catch(function () {});
      }
    }, function () { return refreshRows(null); });
  }

  // The job page: when the job moves, show its new version (at once while
  // the service works on it; otherwise say so, so that nothing a person is
  // writing is lost). While it is worked on, the count of rows read so far
  // is refreshed every 2 s (progress is not an event).
  var live = document.getElementById('job-live');
  if (live) {
    var version = live.getAttribute('data-version');
    var working = live.getAttribute('data-work') === 'true';
    var progress = live.querySelector('[data-progress-rows]');
    var changed = document.getElementById('job-changed');
    var jobId = live.getAttribute('data-job-id');
    var check = function () {
      return getJSON(live.getAttribute('data-job-status')).then(function (j) {
        if (progress) { progress.textContent = formatCount(j.counts.rows); }
        if (String(j.version) === version) { return true; }
        if (working) {
          window.location.replace(window.location.pathname);
        } else if (changed) {
          changed.querySelector('[data-changed-text]').textContent = say('changed', { state: j.label });
          changed.hidden = false;
        }
        return false;
      });
    };
    followEvents(function (id) {
      if (id === jobId) { check().catch(function () {}); }
    }, check);
    if (working) { every(2000, check); }
  }

  // The upload page.
  var form = document.getElementById('upload-form');
  if (form) {
    var select = form.querySelector('#module');
    var showModule = function () {
      form.querySelectorAll('.module-info').forEach(function (s) {
        s.hidden = s.getAttribute('data-module') !== select.value;
      });
    };
    select.addEventListener('change', showModule);
    showModule();

    var input = form.querySelector('#file');
    var zone = document.getElementById('dropzone');
    ['dragenter', 'dragover'].forEach(function (ev) {
      zone.addEventListener(ev, function (e) { e.preventDefault(); zone.classList.add('over'); });
    });
    ['dragleave', 'drop'].forEach(function (ev) {
      zone.addEventListener(ev, function (e) { e.preventDefault(); zone.classList.remove('over'); });
    });
    zone.addEventListener('drop', function (e) {
      if (e.dataTransfer && e.dataTransfer.files.length > 0) { input.files = e.dataTransfer.files; }
    });

    var box = document.getElementById('upload-status');
    var bar = document.getElementById('upload-progress');
    var checking = document.getElementById('validate-progress');
    var message = document.getElementById('upload-message');
    var error = document.getElementById('upload-error');
    var button = document.getElementById('upload-button');

    var typeOf = function (file) {
      var name = file.name.toLowerCase();
      if (/\.(csv|txt)$/.test(name)) { return 'text/csv'; }
      if (/\.xlsx$/.test(name)) { return 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'; }
      if (/\.xls$/.test(name)) { return 'application/vnd.ms-excel'; }
      if (/\.json$/.test(name)) { return 'application/json'; }
      if (/\.ods$/.test(name)) { return 'application/vnd.oasis.opendocument.spreadsheet'; }
      if (/\.(jsonl|ndjson)$/.test(name)) { return 'application/x-ndjson'; }
      return file.type || 'application/octet-stream';
    };
    var fail = function (text) {
      error.textContent = text;
      error.hidden = false;
      button.disabled = false;
      box.hidden = true;
    };
    var follow = function (answer) {
      message.textContent = say('checking');
      every(500, function () {
        return getJSON(answer.status).then(function (j) {
          message.textContent = say('checked', { state: j.label, rows: formatCount(j.counts.rows) });
          if (!j.work) {
            checking.max = 1; checking.value = 1;
            window.location.assign(answer.url);
            return false;
          }
          return true;
        });
      });
    };

    form.addEventListener('submit', function (e) {
      e.preventDefault();
      error.hidden = true;
      var file = input.files && input.files[0];
      if (!file) { fail(say('choose')); return; }
      var mode = form.querySelector('input[name="mode"]:checked').value;
      var onError = form.querySelector('input[name="on_error"]:checked').value;
      // No module chosen: a workbook, one sheet a module.
      var base = select.value === '' ? form.getAttribute('data-workbook') :
        form.getAttribute('data-upload') + encodeURIComponent(select.value);
      var url = base + '?mode=' + encodeURIComponent(mode) + '&on_error=' + encodeURIComponent(onError);
      var safeName = file.name.replace(/[^\x20-\x7e]|["\\]/g, '_');
      var xhr = new XMLHttpRequest();
      xhr.open('POST', url);
      xhr.setRequestHeader('Content-Type', typeOf(file));
      xhr.setRequestHeader('Content-Disposition', 'attachment; filename="' + safeName + '"');
      xhr.setRequestHeader('X-CSRF-Token', csrf);
      xhr.upload.addEventListener('progress', function (ev) {
        if (ev.lengthComputable) {
          bar.value = Math.round((ev.loaded / ev.total) * 100);
          message.textContent = say('uploadingPercent', { percent: bar.value });
        }
      });
      xhr.addEventListener('load', function () {
        var body = null;
        try { body = JSON.parse(xhr.responseText); } catch (ignored) { body = null; }
        if (xhr.status === 202 && body) {
          bar.value = 100;
          follow(body);
        } else if (body && body.detail) {
          fail(body.title + ': ' + body.detail);
        } else {
          fail(say('failedStatus', { status: xhr.status }));
        }
      });
      xhr.addEventListener('error', function () { fail(say('unreachable')); });
      button.disabled = true;
      box.hidden = false;
      bar.value = 0;
      message.textContent = say('uploading');
      xhr.send(file);
    });
  }
})();
