// arena view: live run pages and the keyboard labelling workbench. No inline script anywhere:
// the pages carry their data in data-* attributes and this file does the rest.
(function () {
  'use strict';
  var body = document.body;
  var el = function (id) { return document.getElementById(id); };

  function link(href, text) {
    var a = document.createElement('a'); a.href = href; a.textContent = text; return a;
  }
  function badge(status) {
    var s = document.createElement('span'); s.className = 'badge ' + status; s.textContent = status; return s;
  }
  function fmt(x) { return typeof x === 'number' ? x.toFixed(3) : '–'; }
  // A stale session (the server restarted, or the link was opened again): the server answers
  // {"error": ..., "session_ended": true}; say so at the top of the page, once, and stop.
  function sessionEnded(message) {
    body.setAttribute('data-session-ended', '1');
    if (el('session-ended')) return;
    var box = document.createElement('div');
    box.id = 'session-ended'; box.className = 'problem'; box.setAttribute('role', 'alert');
    box.style.position = 'sticky'; box.style.top = '0'; box.style.zIndex = '10';
    box.textContent = message;
    var main = document.querySelector('main') || body;
    main.insertBefore(box, main.firstChild);
  }
  function jsonOrEnded(r) {
    return r.json().then(function (j) {
      if (!r.ok) {
        var e = new Error(j.error || r.statusText);
        if (j.session_ended) { e.sessionEnded = true; sessionEnded(e.message); }
        throw e;
      }
      return j;
    });
  }
  function pairHref(run, r) {
    return '/r/' + run + '/pair?task=' + encodeURIComponent(r.task_id) + '&agent=' + encodeURIComponent(r.agent);
  }

  // ------------------------------------------------------------------ run page: live updates
  function livePage() {
    var run = body.dataset.run, seq = parseInt(body.dataset.seq || '0', 10);
    var query = body.dataset.query || '';
    var wasFresh = body.dataset.summaryFresh === '1';
    function drawTable(data) {
      var tbody = el('task-body'); if (!tbody) return;
      var judges = Array.prototype.slice.call(document.querySelectorAll('#task-table thead th a'))
        .map(function (a) { return new URL(a.href).searchParams.get('sort') || ''; })
        .map(function (s) { return s.replace(/^-/, ''); })
        .filter(function (s) { return s.indexOf('judge:') === 0; })
        .map(function (s) { return s.slice(6); });
      tbody.textContent = '';
      data.rows.forEach(function (r) {
        var tr = document.createElement('tr'); tr.className = 'row-' + r.status;
        var td = document.createElement('td'); td.className = 'id'; td.appendChild(link(pairHref(run, r), r.task_id));
        tr.appendChild(td);
        var cells = [r.agent, null, String(r.epoch)];
        judges.forEach(function (j) { cells.push(fmt(r.scores[j])); });
        cells.push(fmt(r.disagreement)); cells.push(r.duration_s === null ? '–' : String(r.duration_s));
        cells.forEach(function (text, i) {
          var c = document.createElement('td');
          if (i === 1) c.appendChild(badge(r.status)); else c.textContent = text;
          tr.appendChild(c);
        });
        tbody.appendChild(tr);
      });
      var count = el('task-count');
      if (count) count.textContent = data.total + ' pairs match (live)';
    }
    function poll() {
      var ended = false;
      fetch('/r/' + run + '/api/since?seq=' + seq, {credentials: 'same-origin'})
        .then(jsonOrEnded)
        .then(function (data) {
          if (data.rows && data.rows.length) {
            var list = el('latest-list');
            data.rows.slice().reverse().forEach(function (r) {
              var li = document.createElement('li');
              li.appendChild(link(pairHref(run, r), r.task_id));
              li.appendChild(document.createTextNode(' · ' + r.agent + ' · '));
              li.appendChild(badge(r.status));
              li.className = 'new';
              list.insertBefore(li, list.firstChild);
            });
            while (list.children.length > 20) list.removeChild(list.lastChild);
            fetch('/r/' + run + '/api/table?' + query, {credentials: 'same-origin'})
              .then(function (r) { return r.json(); }).then(drawTable);
          }
          seq = data.seq;
          el('pair-count').textContent = String(data.pairs);
          var note = el('summary-note');
          if (data.summary_fresh && !wasFresh) {
            fetch('/r/' + run + '/api/summary', {credentials: 'same-origin'})
              .then(function (r) { return r.text(); })
              .then(function (html) { el('summary').innerHTML = html; if (note) note.textContent = ''; });
          } else if (!data.summary_fresh && note) {
            note.textContent = 'The leaderboard is being brought up to date with the latest lines.';
          }
          wasFresh = data.summary_fresh;
          body.setAttribute('data-polled', String(Date.now()));
        })
        .catch(function (e) { ended = !!(e && e.sessionEnded); })
        .then(function () { if (!ended) setTimeout(poll, 1000); });
    }
    setTimeout(poll, 1000);
  }

  // ------------------------------------------------------------------ labelling workbench
  function labelPage() {
    var form = el('label-form'), status = el('save-status');
    var started = Date.now();
    var protocol = body.dataset.protocol;
    var keys = protocol === 'absolute' ? ['if', 'vq'] : [];
    function value(name) {
      var c = form.querySelector('input[name="' + name + '"]:checked'); return c ? c.value : null;
    }
    function set(name, v) {
      var input = form.querySelector('input[name="' + name + '"][value="' + v + '"]');
      if (input) { input.checked = true; }
    }
    function fields() {
      var comment = form.querySelector('textarea[name="comment"]').value;
      if (protocol === 'pairwise') return {choice: value('choice'), comment: comment};
      var slide = form.querySelector('input[name="damage_slide"]').value;
      return {'if': value('if') === null ? null : parseInt(value('if'), 10),
              vq: value('vq') === null ? null : parseInt(value('vq'), 10),
              damage: value('damage'), damage_slide: slide ? parseInt(slide, 10) : null, comment: comment};
    }
    function post(url, payload) {
      return fetch(url, {method: 'POST', credentials: 'same-origin',
        headers: {'Content-Type': 'application/json', 'X-CSRF-Token': body.dataset.csrf},
        body: JSON.stringify(payload)}).then(jsonOrEnded);
    }
    function save(advance) {
      var f = fields();
      if (protocol === 'pairwise' ? !f.choice : (f['if'] === null || f.vq === null || !f.damage)) {
        status.textContent = 'answer every question first'; return;
      }
      status.textContent = 'saving…';
      post('/c/' + body.dataset.campaign + '/api/label',
           {item: parseInt(body.dataset.item, 10), fields: f, seconds: (Date.now() - started) / 1000})
        .then(function (j) {
          status.textContent = 'saved (version ' + j.version + ')';
          body.setAttribute('data-saved', String(j.version));
          if (advance && body.dataset.next) location.href = body.dataset.next;
          else if (advance) location.reload();
        })
        .catch(function (e) { status.textContent = 'not saved: ' + e.message; });
    }
    form.addEventListener('submit', function (e) { e.preventDefault(); save(true); });
    el('undo').addEventListener('click', function () { undo(); });
    function undo() {
      post('/c/' + body.dataset.campaign + '/api/undo', {item: parseInt(body.dataset.item, 10)})
        .then(function () { location.reload(); })
        .catch(function (e) { status.textContent = 'undo: ' + e.message; });
    }
    document.addEventListener('keydown', function (e) {
      var tag = (e.target.tagName || '').toLowerCase();
      if (tag === 'textarea' || (tag === 'input' && e.target.type === 'number')) {
        if (e.key === 'Escape') e.target.blur();
        return;
      }
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === 'ArrowLeft' && body.dataset.prev) { location.href = body.dataset.prev; return; }
      if (e.key === 'ArrowRight' && body.dataset.next) { location.href = body.dataset.next; return; }
      if (e.key === 'u') { undo(); return; }
      if (e.key === 'Enter') { e.preventDefault(); save(true); return; }
      if (protocol === 'pairwise') {
        var map = {'1': 'left', '2': 'right', '0': 'tie', 't': 'tie'};
        if (map[e.key]) { set('choice', map[e.key]); save(true); }
        return;
      }
      if (/^[0-4]$/.test(e.key)) {
        var open = keys.filter(function (k) { return value(k) === null; });
        set(open.length ? open[0] : keys[keys.length - 1], e.key);
        return;
      }
      if (e.key === 'y') { set('damage', 'yes'); form.querySelector('input[name="damage_slide"]').focus(); }
      if (e.key === 'n') { set('damage', 'no'); }
    });
  }

  if (body.dataset.page === 'run') livePage();
  if (body.dataset.page === 'label') labelPage();
})();
