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
    // the columns after epoch, as the page's header has them (sort keys): judge:<j>, people:<campaign>
    function headerColumns(prefix) {
      return Array.prototype.slice.call(document.querySelectorAll('#task-table thead th a'))
        .map(function (a) { return new URL(a.href).searchParams.get('sort') || ''; })
        .map(function (s) { return s.replace(/^-/, ''); })
        .filter(function (s) { return s.indexOf(prefix) === 0; })
        .map(function (s) { return s.slice(prefix.length); });
    }
    // a people cell: the mean (or win share) and the number of labels, as the server draws it
    function peopleCell(h) {
      var c = document.createElement('td'); c.className = 'people';
      if (!h) { c.textContent = '–'; return c; }
      c.title = h.n + ' label(s); on 0–1: ' + fmt(h.unit) + '; largest gap to a judge: ' + fmt(h.gap);
      c.appendChild(document.createTextNode(h.mean.toFixed(2) + ' '));
      var n = document.createElement('span'); n.className = 'muted'; n.textContent = '(' + h.n + ')';
      c.appendChild(n);
      return c;
    }
    function drawTable(data) {
      var tbody = el('task-body'); if (!tbody) return;
      var judges = headerColumns('judge:'), people = headerColumns('people:');
      tbody.textContent = '';
      data.rows.forEach(function (r) {
        var tr = document.createElement('tr'); tr.className = 'row-' + r.status;
        var td = document.createElement('td'); td.className = 'id'; td.appendChild(link(pairHref(run, r), r.task_id));
        tr.appendChild(td);
        var cells = [r.agent, null, String(r.epoch)];
        judges.forEach(function (j) { cells.push(fmt(r.scores[j])); });
        cells.forEach(function (text, i) {
          var c = document.createElement('td');
          if (i === 1) c.appendChild(badge(r.status)); else c.textContent = text;
          tr.appendChild(c);
        });
        people.forEach(function (cid) { tr.appendChild(peopleCell((r.people || {})[cid])); });
        [fmt(r.disagreement), r.duration_s === null ? '–' : String(r.duration_s)].forEach(function (text) {
          var c = document.createElement('td'); c.textContent = text; tr.appendChild(c);
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

  // ------------------------------------------------------------------ slide zoom
  // Every slide image of a label page opens at full resolution in an overlay (click, or Tab to it
  // and Enter / Space; z opens the first). In the overlay: drag or arrow keys pan, + / - zoom,
  // f switches between fit and full size, [ / ] go to the other slides, Escape closes.
  function zoomer() {
    var box = el('zoom'), pane = el('zoom-pane'), img = el('zoom-img');
    if (!box || !pane || !img) return null;
    var thumbs = function () { return Array.prototype.slice.call(document.querySelectorAll('main img.zoomable')); };
    var opener = null, scale = 1, drag = null;
    function caption(t) {
      var c = t.parentNode && t.parentNode.querySelector('.muted');
      return (c ? c.textContent : t.alt) || '';
    }
    function fitScale() {
      if (!img.naturalWidth) return 1;
      return Math.min(1, pane.clientWidth / img.naturalWidth, pane.clientHeight / img.naturalHeight);
    }
    function apply() {
      if (!img.naturalWidth) return;
      img.style.width = Math.round(img.naturalWidth * scale) + 'px';
      img.style.height = Math.round(img.naturalHeight * scale) + 'px';
      el('zoom-scale').textContent = Math.round(scale * 100) + '%' + (scale === 1 ? ' (full resolution)' : '');
      box.setAttribute('data-scale', String(scale));
    }
    function zoomTo(s) {
      var cx = (pane.scrollLeft + pane.clientWidth / 2) / (scale || 1);
      var cy = (pane.scrollTop + pane.clientHeight / 2) / (scale || 1);
      scale = Math.max(0.1, Math.min(8, s)); apply();
      pane.scrollLeft = cx * scale - pane.clientWidth / 2; pane.scrollTop = cy * scale - pane.clientHeight / 2;
    }
    function show(t) {
      opener = t; scale = 1;
      img.removeAttribute('style');
      img.onload = function () { apply(); box.setAttribute('data-ready', '1'); };
      box.removeAttribute('data-ready');
      img.src = t.currentSrc || t.src; img.alt = t.alt;
      el('zoom-caption').textContent = caption(t);
      if (img.complete && img.naturalWidth) { apply(); box.setAttribute('data-ready', '1'); }
      pane.scrollLeft = 0; pane.scrollTop = 0;
    }
    function open(t) {
      if (!t) return;
      box.hidden = false; document.documentElement.classList.add('zoom-open');
      show(t); pane.focus();
    }
    function close() {
      if (box.hidden) return;
      box.hidden = true; document.documentElement.classList.remove('zoom-open');
      if (opener) opener.focus();
    }
    function step(d) {
      var list = thumbs(), i = list.indexOf(opener);
      if (list.length) show(list[(i + d + list.length) % list.length]);
    }
    thumbs().forEach(function (t) {
      t.tabIndex = 0; t.setAttribute('role', 'button');
      t.title = 'Enlarge to full resolution (click, or Enter)';
      t.addEventListener('click', function () { open(t); });
      t.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); e.stopPropagation(); open(t); }
      });
    });
    el('zoom-close').addEventListener('click', close);
    pane.addEventListener('pointerdown', function (e) {
      drag = {x: e.clientX, y: e.clientY, l: pane.scrollLeft, t: pane.scrollTop};
      pane.setPointerCapture(e.pointerId); e.preventDefault();
    });
    pane.addEventListener('pointermove', function (e) {
      if (!drag) return;
      pane.scrollLeft = drag.l - (e.clientX - drag.x); pane.scrollTop = drag.t - (e.clientY - drag.y);
    });
    pane.addEventListener('pointerup', function () { drag = null; });
    pane.addEventListener('pointercancel', function () { drag = null; });
    // every key while the overlay is open is the overlay's (the labelling keys wait)
    function key(e) {
      var k = e.key, pan = 80;
      if (k === 'Escape' || k === 'z') { close(); }
      else if (k === '+' || k === '=') { zoomTo(scale * 1.25); }
      else if (k === '-' || k === '_') { zoomTo(scale / 1.25); }
      else if (k === 'f') { var fit = fitScale(); zoomTo(Math.abs(scale - fit) < 1e-3 ? 1 : fit); }
      else if (k === ']' || k === 'PageDown') { step(1); }
      else if (k === '[' || k === 'PageUp') { step(-1); }
      else if (k === 'ArrowLeft') { pane.scrollLeft -= pan; }
      else if (k === 'ArrowRight') { pane.scrollLeft += pan; }
      else if (k === 'ArrowUp') { pane.scrollTop -= pan; }
      else if (k === 'ArrowDown') { pane.scrollTop += pan; }
      else if (k === 'Tab') {  // focus stays in the dialog: the image pane and the close button
        (document.activeElement === pane ? el('zoom-close') : pane).focus();
      }
      else if (k === 'Enter' && document.activeElement === el('zoom-close')) { close(); }
      e.preventDefault();
    }
    return {
      open: open, key: key,
      isOpen: function () { return !box.hidden; },
      first: function () {
        var a = document.activeElement;
        return a && a.classList && a.classList.contains('zoomable') ? a : thumbs()[0];
      }
    };
  }

  // ------------------------------------------------------------------ pairwise: one grid
  // The server sends one grid per prediction (original | prediction | target each); merge them
  // into one: slide | original | left prediction | right prediction | target, rows matched by the
  // original's slide (a slide only the target adds, by the target's slide). Without the script
  // the two grids stand side by side (CSS).
  function mergePairwise() {
    var holder = el('pair-sides');
    if (!holder) return;
    var sides = {};
    Array.prototype.forEach.call(holder.querySelectorAll('.pair-side'), function (s) {
      var grid = s.querySelector('.slides');
      if (grid) sides[s.getAttribute('data-screen')] = grid;
    });
    if (!sides.left || !sides.right) return;
    var order = [], rows = {};
    ['left', 'right'].forEach(function (screen) {
      var kids = Array.prototype.slice.call(sides[screen].children).slice(4);
      for (var i = 0; i + 3 < kids.length; i += 4) {
        var num = kids[i], o = kids[i + 1], p = kids[i + 2], t = kids[i + 3];
        var label = num.textContent.trim(), key;
        if (label !== 'slide new') key = label;
        else if (!/^absent/.test(t.textContent.trim())) key = 'target ' + t.textContent.trim();
        else key = screen + ' ' + p.textContent.trim();
        if (!rows[key]) { rows[key] = {num: num, original: o, target: t}; order.push(key); }
        rows[key][screen] = p;
      }
    });
    var rank = function (k) { var m = /^slide (\d+)$/.exec(k); return m ? parseInt(m[1], 10) : Infinity; };
    order = order.map(function (k, i) { return [k, i]; }).sort(function (a, b) {
      return (rank(a[0]) - rank(b[0])) || (a[1] - b[1]);
    }).map(function (x) { return x[0]; });
    var grid = document.createElement('div');
    grid.className = 'slides pair-grid'; grid.id = 'pair-grid';
    ['', 'original', 'left prediction', 'right prediction', 'target'].forEach(function (h, i) {
      var d = document.createElement('div'); if (i) { d.className = 'h'; d.textContent = h; } grid.appendChild(d);
    });
    order.forEach(function (k) {
      var r = rows[k];
      grid.appendChild(r.num); grid.appendChild(r.original);
      ['left', 'right'].forEach(function (screen) {
        var c = r[screen];
        if (!c) {  // in neither that prediction's nor the target's changes: as in the original
          c = document.createElement('div'); c.className = 'none';
          c.textContent = 'unchanged in the ' + screen + ' prediction';
        }
        c.setAttribute('data-screen', screen);
        grid.appendChild(c);
      });
      grid.appendChild(r.target);
    });
    Object.keys(sides).forEach(function (s) { sides[s].parentNode.removeChild(sides[s]); });
    var h = document.createElement('h2'); h.textContent = 'The changed slides, both predictions side by side';
    holder.parentNode.insertBefore(h, holder);
    holder.parentNode.insertBefore(grid, holder);
    holder.classList.add('merged');
  }

  // ------------------------------------------------------------------ labelling workbench
  function labelPage() {
    var form = el('label-form'), status = el('save-status');
    var started = Date.now();
    var protocol = body.dataset.protocol;
    var keys = protocol === 'absolute' ? ['if', 'vq'] : [];
    var titles = {'if': 'instruction following', vq: 'visual quality', damage: 'damage', choice: 'choice'};
    var slideInput = form.querySelector('input[name="damage_slide"]');
    if (protocol === 'pairwise') mergePairwise();
    Array.prototype.forEach.call(document.querySelectorAll('main .slides img'), function (i) {
      i.classList.add('zoomable');
    });
    var zoom = zoomer();
    function value(name) {
      var c = form.querySelector('input[name="' + name + '"]:checked'); return c ? c.value : null;
    }
    function set(name, v) {
      var input = form.querySelector('input[name="' + name + '"][value="' + v + '"]');
      if (input) {
        input.checked = true;
        // focus on that group's radios follows the answer (as arrow keys would), so Tab leaves the group
        var a = document.activeElement;
        if (a && a.type === 'radio' && a.name === name && a !== input) input.focus();
      }
      showAnswers();
    }
    // the active scale: the one digits answer (absolute campaigns), outlined on the page
    var active = keys.filter(function (k) { return value(k) === null; })[0] || keys[0];
    function setActive(k) {
      active = k;
      Array.prototype.forEach.call(form.querySelectorAll('fieldset.scale'), function (f) {
        f.classList.toggle('active', f.getAttribute('data-key') === k);
      });
      body.setAttribute('data-active-scale', k || '');
      showAnswers();
    }
    function showAnswers() {
      var box = el('answers'); if (!box) return;
      var parts = (protocol === 'pairwise' ? ['choice'] : keys.concat(['damage'])).map(function (k) {
        var v = value(k), t = titles[k] + ': ' + (v === null ? '–' : v);
        if (k === 'damage' && v === 'yes' && slideInput && slideInput.value) t += ' (slide ' + slideInput.value + ')';
        return (k === active ? '▸ ' : '') + t;
      });
      box.textContent = parts.join(' · ');
    }
    function fields() {
      var comment = form.querySelector('textarea[name="comment"]').value;
      if (protocol === 'pairwise') return {choice: value('choice'), comment: comment};
      var slide = slideInput.value, damage = value('damage');
      return {'if': value('if') === null ? null : parseInt(value('if'), 10),
              vq: value('vq') === null ? null : parseInt(value('vq'), 10),
              damage: damage, damage_slide: damage === 'yes' && slide ? parseInt(slide, 10) : null,
              comment: comment};
    }
    function post(url, payload) {
      return fetch(url, {method: 'POST', credentials: 'same-origin',
        headers: {'Content-Type': 'application/json', 'X-CSRF-Token': body.dataset.csrf},
        body: JSON.stringify(payload)}).then(jsonOrEnded);
    }
    function save(advance) {
      var f = fields();
      if (protocol === 'pairwise' ? !f.choice : (f['if'] === null || f.vq === null || !f.damage)) {
        var missing = protocol === 'pairwise' ? ['choice'] :
          keys.concat(['damage']).filter(function (k) { return value(k) === null; });
        status.textContent = 'not saved: answer ' + missing.map(function (k) { return titles[k]; }).join(', ') + ' first';
        status.className = 'warn';
        if (missing[0] !== 'damage' && missing[0] !== 'choice') setActive(missing[0]);
        return;
      }
      status.textContent = 'saving…'; status.className = '';
      post('/c/' + body.dataset.campaign + '/api/label',
           {item: parseInt(body.dataset.item, 10), fields: f, seconds: (Date.now() - started) / 1000})
        .then(function (j) {
          status.textContent = 'saved (version ' + j.version + ')'; status.className = 'ok';
          body.setAttribute('data-saved', String(j.version));
          // the next item; after the last one, the first still unlabelled (or the "all done" page)
          if (advance) location.href = body.dataset.next || ('/c/' + body.dataset.campaign + '/label');
        })
        .catch(function (e) { status.textContent = 'not saved: ' + e.message; status.className = 'warn'; });
    }
    form.addEventListener('submit', function (e) { e.preventDefault(); save(true); });
    form.addEventListener('change', function (e) {
      var f = e.target.closest && e.target.closest('fieldset.scale');
      if (f && keys.indexOf(f.getAttribute('data-key')) >= 0) setActive(f.getAttribute('data-key'));
      else showAnswers();
    });
    form.addEventListener('input', showAnswers);
    // Tab (or a click) into a scale makes it the active one
    form.addEventListener('focusin', function (e) {
      var f = e.target.closest && e.target.closest('fieldset.scale');
      if (f && keys.indexOf(f.getAttribute('data-key')) >= 0) setActive(f.getAttribute('data-key'));
    });
    el('undo').addEventListener('click', function () { undo(); });
    function undo() {
      post('/c/' + body.dataset.campaign + '/api/undo', {item: parseInt(body.dataset.item, 10)})
        .then(function () { location.reload(); })
        .catch(function (e) { status.textContent = 'undo: ' + e.message; status.className = 'warn'; });
    }
    function damage(yes) {
      set('damage', yes ? 'yes' : 'no');
      if (yes) { slideInput.focus(); slideInput.select(); }  // then type the slide number
      else if (document.activeElement === slideInput) slideInput.blur();
    }
    document.addEventListener('keydown', function (e) {
      if (zoom && zoom.isOpen()) { zoom.key(e); return; }
      var t = e.target, tag = (t.tagName || '').toLowerCase();
      var type = tag === 'input' ? (t.type || 'text').toLowerCase() : '';
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      // a text field takes every key as text; Escape leaves it
      if (tag === 'textarea' || tag === 'select' || t.isContentEditable ||
          (tag === 'input' && ['radio', 'checkbox', 'number', 'button', 'submit'].indexOf(type) < 0)) {
        if (e.key === 'Escape') t.blur();
        return;
      }
      // the slide-number field takes digits and editing keys; y / n still answer the damage question
      if (type === 'number') {
        if (e.key === 'Escape') { t.blur(); return; }
        if (e.key === 'y' || e.key === 'n') { e.preventDefault(); damage(e.key === 'y'); }
        return;
      }
      if (e.key === 'Escape') { if (t !== body && t.blur) t.blur(); return; }
      // Enter / Space on a focused link, button or summary does what it says
      if ((e.key === 'Enter' || e.key === ' ') && (tag === 'a' || tag === 'button' || tag === 'summary')) return;
      if (e.key === 'Tab') return;  // focus moves as usual
      if (e.key === 'ArrowLeft' && body.dataset.prev) { e.preventDefault(); location.href = body.dataset.prev; return; }
      if (e.key === 'ArrowRight' && body.dataset.next) { e.preventDefault(); location.href = body.dataset.next; return; }
      if (e.key === 'z' && zoom) { e.preventDefault(); zoom.open(zoom.first()); return; }
      if (e.key === 'h') {  // the campaign's instructions, when it has some
        var help = document.getElementById('instructions-link');
        if (help) { e.preventDefault(); location.href = help.href; }
        return;
      }
      if (e.key === 'u') { undo(); return; }
      if (e.key === 'Enter') { e.preventDefault(); save(true); return; }
      if (protocol === 'pairwise') {
        var map = {'1': 'left', '2': 'right', '0': 'tie', 't': 'tie'};
        if (map[e.key]) { e.preventDefault(); set('choice', map[e.key]); save(true); }
        return;
      }
      if (/^[0-4]$/.test(e.key)) {
        e.preventDefault();
        set(active, e.key);
        var open = keys.filter(function (k) { return value(k) === null; });
        setActive(open.length ? open[0] : active);
        return;
      }
      var letter = form.querySelector('fieldset.scale[data-letter="' + e.key + '"]');
      if (letter) { e.preventDefault(); setActive(letter.getAttribute('data-key')); return; }
      if (e.key === 'y' || e.key === 'n') { e.preventDefault(); damage(e.key === 'y'); }
    });
    setActive(active);
  }

  if (body.dataset.page === 'run') livePage();
  if (body.dataset.page === 'label') labelPage();
})();
